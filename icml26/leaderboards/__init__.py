"""Leaderboards: submission bundles, validation, verification by re-run, ranking and pages.

    from icml26 import leaderboards as lb
    bundle = lb.make_bundle(results, name="My agent")          # TrialResults of one agent
    store = lb.LeaderboardStore("results/leaderboard.db")      # or a PostgreSQL URL
    receipt = store.submit(bundle)                             # validates; PENDING entries
    lb.verify_entry(store, receipt.entry_ids[0])               # re-run on held-out seeds
    lb.render_site(store, "site/")                             # static pages and figures
    app = lb.create_app(store)                                 # ASGI app (FastAPI)

Modules: :mod:`~icml26.leaderboards.bundle` (schema, content hash),
:mod:`~icml26.leaderboards.validate` (rules, field-named errors),
:mod:`~icml26.leaderboards.store` (SQL store, statuses, tokens),
:mod:`~icml26.leaderboards.verify` (held-out seeds, re-run, states),
:mod:`~icml26.leaderboards.sandbox` (the worker the submitted agent runs in),
:mod:`~icml26.leaderboards.jail` (its confinement: namespaces, read-only root, tmpfs,
unprivileged uid, cgroups), :mod:`~icml26.leaderboards.artefacts` (the agent's code, pinned by
hash; wheel inspection; per-entry environments),
:mod:`~icml26.leaderboards.ranking` (IQM, intervals, ties, probability of improvement,
performance profiles), :mod:`~icml26.leaderboards.figures`, :mod:`~icml26.leaderboards.site`,
:mod:`~icml26.leaderboards.server`, :mod:`~icml26.leaderboards.cli` (``icml26 leaderboard``).
See docs/leaderboard.md.
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_EXPORTS = {
    "make_bundle": "bundle",
    "write_bundle": "bundle",
    "write_bundles": "bundle",
    "content_hash": "bundle",
    "validate_bundle": "validate",
    "SubmissionInvalid": "validate",
    "FieldError": "validate",
    "LIMITS": "validate",
    "LeaderboardStore": "store",
    "Entry": "store",
    "STATUSES": "store",
    "verify_entry": "verify",
    "verify_pending": "verify",
    "heldout_seeds": "verify",
    "Limits": "sandbox",
    "rank_task": "ranking",
    "rank_all": "ranking",
    "cross_task": "ranking",
    "render_site": "site",
    "create_app": "server",
    "serve": "server",
}

# lazy, so that `import icml26.leaderboards` pulls in neither SQLAlchemy nor FastAPI
__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
