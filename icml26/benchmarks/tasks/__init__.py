"""Task definitions and family ``run_trial`` functions, one module per family."""
