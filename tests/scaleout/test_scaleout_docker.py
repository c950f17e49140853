"""docker/: the compose file and the Dockerfiles name only paths, options and commands that exist.

No Docker engine runs here, so images are not built; instead every path a file names is checked
on disk, every command line is parsed by the program it calls (the icml26 CLI, `ray start`,
the CARLA check script), and the services are wired to each other consistently.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import socket
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from icml26 import benchmarks, cli

# importing `ray start` loads ray.serve, whose pydantic models warn on import
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _carla_check() -> Any:
    spec = importlib.util.spec_from_file_location("carla_check", DOCKER / "carla_check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _dockerfile(service: dict[str, Any]) -> Path:
    build = service["build"]
    context = (DOCKER / build["context"]).resolve()
    return context / build.get("dockerfile", "Dockerfile")


def _parse_dockerfile(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines, buf = [], ""
    for raw in path.read_text().splitlines():
        if raw.lstrip().startswith("#") and not buf:
            continue
        buf += raw.rstrip("\\").strip() + " " if raw.endswith("\\") else raw.strip()
        if not raw.endswith("\\"):
            if buf.strip():
                op, _, rest = buf.strip().partition(" ")
                lines.append((op.upper(), rest.strip()))
            buf = ""
    return lines


def _args(path: Path) -> dict[str, str]:
    out = {}
    for op, rest in _parse_dockerfile(path):
        if op == "ARG":
            name, _, default = rest.partition("=")
            out[name] = default
    return out


def _check_command(argv: list[str], where: str) -> None:
    """Parse ``argv`` with the program it names; fail with ``where`` if it would not start."""
    prog = argv[0]
    if prog == "icml26":
        try:
            ns = cli.build_parser().parse_args(argv[1:])
        except SystemExit:
            pytest.fail(f"{where}: `{shlex.join(argv)}` is not a valid icml26 command line")
        if getattr(ns, "suite", None):
            assert ns.suite in benchmarks.suite_names(), f"{where}: unknown suite {ns.suite!r}"
        if getattr(ns, "executor", None):
            assert ns.executor in ("local", "process", "ray")
            cli._executor_options(ns)  # the ray options go with --executor ray
    elif prog == "ray":
        from ray.scripts.scripts import cli as ray_cli

        sub = ray_cli.commands[argv[1]]
        sub.make_context(argv[1], list(argv[2:]))  # raises on an unknown or malformed option
    elif prog == "python":
        script = argv[1]
        assert script.startswith("/opt/icml26/docker/"), f"{where}: unexpected script {script}"
        local = DOCKER / Path(script).name
        assert local.exists(), f"{where}: {local} does not exist"
        if local.name == "carla_check.py":
            _carla_check().build_parser().parse_args(argv[2:])
    else:
        pytest.fail(f"{where}: no check for program {prog!r}")


def test_compose_services_and_profiles() -> None:
    assert {
        "postgres",
        "leaderboard",
        "bench",
        "ray-head",
        "ray-worker",
        "ray-bench",
        "carla",
        "driving-carla",
    } <= set(SERVICES)
    # plain `docker compose up` starts only the database and the leaderboard
    assert {n for n, s in SERVICES.items() if "profiles" not in s} == {"postgres", "leaderboard"}
    for name, svc in SERVICES.items():
        assert "build" in svc or re.fullmatch(r"[\w./-]+:[\w.-]+", svc["image"]), (
            f"{name}: external images must be pinned to a tag, got {svc.get('image')!r}"
        )
        for dep in svc.get("depends_on", {}):
            assert dep in SERVICES, f"{name} depends on unknown service {dep!r}"
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith((".", "/")):
                assert (DOCKER / src).exists(), f"{name}: bind source {src} does not exist"
            else:
                assert src in COMPOSE["volumes"], f"{name}: named volume {src!r} is not declared"


@pytest.mark.parametrize("name", sorted(n for n, s in SERVICES.items() if "build" in s))
def test_build_paths_and_args_exist(name: str) -> None:
    svc = SERVICES[name]
    dockerfile = _dockerfile(svc)
    assert dockerfile.exists(), f"{name}: {dockerfile} does not exist"
    assert (DOCKER / svc["build"]["context"]).resolve() == ROOT
    declared = _args(dockerfile)
    for arg in svc["build"].get("args", {}):
        assert arg in declared, f"{name}: build arg {arg} is not an ARG of {dockerfile.name}"


@pytest.mark.parametrize("name", sorted(n for n, s in SERVICES.items() if "command" in s))
def test_compose_commands_parse(name: str) -> None:
    svc = SERVICES[name]
    argv = [str(a) for a in svc["command"]]
    if "build" not in svc:  # an external image's own program: checked for the flags we rely on
        if svc["image"].startswith("carlasim/carla:"):
            assert "./CarlaUE4.sh" in argv and "-RenderOffScreen" in argv
        return
    _check_command(argv, f"compose service {name}")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=[p.name for p in DOCKERFILES])
def test_dockerfile_paths_extras_and_commands(dockerfile: Path) -> None:
    steps = _parse_dockerfile(dockerfile)
    args = _args(dockerfile)
    assert (dockerfile.parent / f"{dockerfile.name}.dockerignore").exists()
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    for wanted in args["EXTRAS"].split(","):
        assert wanted in extras, f"{dockerfile.name}: extra {wanted!r} is not in pyproject.toml"
    # the same CPU torch the Makefile installs
    assert f"torch=={args['TORCH_VERSION']}" in (ROOT / "Makefile").read_text()
    for op, rest in steps:
        if op == "COPY":
            *sources, _dest = [p for p in rest.split() if not p.startswith("--")]
            for src in sources:
                assert (ROOT / src).exists(), f"{dockerfile.name}: COPY source {src} does not exist"
        if op in ("CMD", "ENTRYPOINT"):
            import json

            _check_command(json.loads(rest), f"{dockerfile.name} {op}")
    cmd = next(rest for op, rest in steps if op == "CMD")
    assert cmd.startswith("[")


def test_leaderboard_healthcheck_route_answers(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from icml26.leaderboards.server import create_app

    text = (DOCKER / "leaderboard.Dockerfile").read_text()
    path = re.search(r"http://127\.0\.0\.1:8026(/[\w/]+)", text).group(1)  # type: ignore[union-attr]
    with TestClient(create_app(tmp_path / "lb.db")) as client:
        assert client.get(path).status_code == 200
    serve = SERVICES["leaderboard"]["command"]
    assert (
        serve[serve.index("--port") + 1]
        == "8026"
        == SERVICES["leaderboard"]["ports"][0].split(":")[-1]
    )


def test_services_are_wired_to_each_other() -> None:
    from sqlalchemy.engine import make_url

    db_users = [
        n
        for n, s in SERVICES.items()
        if any("@postgres:" in str(v) for v in (s.get("environment") or {}).values())
    ]
    assert {"leaderboard", "bench", "ray-bench", "driving-carla"} <= set(db_users)
    pg = SERVICES["postgres"]["environment"]
    for name in db_users:
        for value in SERVICES[name]["environment"].values():
            if "@postgres:" in str(value):
                url = make_url(str(value).replace("${ICML26_DB_PASSWORD:-icml26-local}", "pw"))
                assert url.drivername == "postgresql+psycopg" and url.database == pg["POSTGRES_DB"]
                assert url.username == pg["POSTGRES_USER"]
        assert SERVICES[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    head = SERVICES["ray-head"]["command"]
    gcs_port = next(a.split("=")[1] for a in head if a.startswith("--port="))
    client_port = next(a.split("=")[1] for a in head if a.startswith("--ray-client-server-port="))
    assert f"--address=ray-head:{gcs_port}" in SERVICES["ray-worker"]["command"]
    assert f"ray://ray-head:{client_port}" in SERVICES["ray-bench"]["command"]
    for name in ("ray-head", "ray-worker", "ray-bench"):
        assert SERVICES[name]["environment"]["RAY_AUTH_MODE"] == "token"
    # the driving check reaches the CARLA service on the port the server listens on
    env = SERVICES["driving-carla"]["environment"]
    assert env["CARLA_HOST"] == "carla"
    assert f"-carla-rpc-port={env['CARLA_PORT']}" in SERVICES["carla"]["command"]
    assert (
        SERVICES["driving-carla"]["build"]["args"]["CARLA_VERSION"]
        == SERVICES["carla"]["image"].split(":")[1]
    )


def test_carla_check_fails_fast_without_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("CARLA_HOST", "127.0.0.1")
    monkeypatch.setenv("CARLA_PORT", str(port))
    mod = _carla_check()
    with pytest.raises(
        SystemExit, match=f"no CARLA server at 127.0.0.1:{port} after 0 s.*RenderOffScreen"
    ):
        mod.main(["--wait", "0"])
    monkeypatch.setenv("CARLA_PORT", "two-thousand")
    with pytest.raises(SystemExit, match="CARLA_PORT must be an integer"):
        mod.main(["--wait", "0"])


def test_compose_carla_settings_reach_the_driving_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driving-carla service's CARLA_HOST/CARLA_PORT are what the driving env's carla backend
    dials (a stand-in `carla` client module records the address; no server here)."""
    backend = pytest.importorskip("icml26.envs.driving.backends.carla_backend")
    dialled: list[tuple[str, int]] = []

    class Client:
        def __init__(self, host: str, port: int) -> None:
            dialled.append((host, port))

        def set_timeout(self, seconds: float) -> None:
            pass

        def get_world(self) -> None:
            raise RuntimeError("time-out of 5000ms while waiting for the simulator")

    monkeypatch.setitem(sys.modules, "carla", types.SimpleNamespace(Client=Client))
    env = SERVICES["driving-carla"]["environment"]
    monkeypatch.setenv("CARLA_HOST", env["CARLA_HOST"])
    monkeypatch.setenv("CARLA_PORT", env["CARLA_PORT"])
    with pytest.raises(ConnectionError, match="no CARLA server answered at carla:2000"):
        backend.connect()
    assert dialled == [("carla", 2000)]
    # carla_check.py, once the port answers, builds ScenePilot on that backend and address
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        monkeypatch.setenv("CARLA_HOST", "127.0.0.1")
        monkeypatch.setenv("CARLA_PORT", str(port))
        with pytest.raises(ConnectionError, match=f"no CARLA server answered at 127.0.0.1:{port}"):
            _carla_check().main(["--wait", "5"])
    assert dialled[-1] == ("127.0.0.1", port)
