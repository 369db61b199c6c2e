"""Nothing a script does can hang a run on the fake server: a loop inside a coroutine, a pattern
search that never comes back from C, a script that tries to switch the budget's hook off; a heap
that runs out, and limits outside any sane range.

The command-line tests run the program in a subprocess bounded by a generous timeout: a hang
becomes a failure, never a stuck test run. The time from SIGTERM to the process's end is printed
(``pytest -s``), not asserted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.backends import FakeRedisBackend
from simulator.checks import ConfigError

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: Bounds a subprocess that should end in about a second; only reached when it hangs.
BOUND_S = 60
#: "Ended" after SIGTERM: generous, for a busy machine; the measured time is printed.
ENDED_S = 10

HEADER = """--[[ ratelimit
keys = ["rl:hang:{client}"]
argv = ["now_ms"]
reply = { allowed = 1 }
]]
"""
HANGS = {
    # Lua keeps a hook per coroutine: a new one had none, so the budget never looked
    "coloop": "coroutine.wrap(function() while true do end end)()\nreturn {1}\n",
    # one C call that backtracks for ever: no Lua instruction, no hook
    "pattern": "string.find(string.rep('a', 40), string.rep('a*', 40) .. 'b')\nreturn {1}\n",
    # the budget's hook switched off, or tried to be
    "sethook": "pcall(function() debug.sethook() end)\nwhile true do end\nreturn {1}\n",
}

#: What a hanging script logs first (redis.log, on stderr), so that the signal is sent while
#: the script runs.
INSIDE = "inside the script"


def _env(**limits: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMULATOR_SCRIPT_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env | limits


def _cpu_s(pid: int) -> float:
    """CPU time the process has used (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _busy_in_the_script(pid: int, cpu_s: float = 0.3) -> None:
    """Return once the process has spent ``cpu_s`` more of CPU time (it is deep in the script,
    past the Python call that logged)."""
    start, deadline = _cpu_s(pid), time.monotonic() + BOUND_S
    while _cpu_s(pid) - start < cpu_s:
        assert time.monotonic() < deadline, "the script never got busy"
        time.sleep(0.02)


def _script(tmp_path: Path, name: str, body: str, log: bool = False) -> Path:
    path = tmp_path / f"{name}.lua"
    path.write_text(HEADER + (f"redis.log(redis.LOG_WARNING, '{INSIDE}')\n" if log else "") + body)
    return path


@pytest.mark.parametrize("name", list(HANGS))
def test_sigterm_ends_a_hanging_script_on_the_fake_server(name, tmp_path):
    path = _script(tmp_path, name, HANGS[name], log=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", "burst", "--script", f"{name}={path}"],
        cwd=tmp_path,
        env=_env(SIMULATOR_SCRIPT_TIME_S="3600"),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if INSIDE in line:
                break
        _busy_in_the_script(proc.pid)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=ENDED_S)
        took_s = time.monotonic() - sent
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()  # only the process this test started, by its own handle
            proc.wait()
    print(f"{name}: SIGTERM to exit {took_s:.3f} s")
    assert code == 128 + signal.SIGTERM, err
    assert "interrupted (SIGTERM)" in err and "Traceback" not in err
    if name == "pattern":  # out of the hook's reach: the watchdog ended it
        assert "inside a script call" in err


def test_the_budget_stops_a_loop_inside_a_coroutine_naming_the_script(tmp_path):
    path = _script(tmp_path, "coloop", HANGS["coloop"])
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "burst", "--script", f"coloop={path}"],
        cwd=tmp_path,
        env=_env(SIMULATOR_SCRIPT_TIME_S="1"),
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert str(path) in done.stderr and "ran longer than 1 s" in done.stderr


def test_the_budget_holds_in_a_coroutine_made_with_create():
    backend = FakeRedisBackend(script_time_s=0.2)
    script = "local co = coroutine.create(function() while true do end end) coroutine.resume(co)"
    with pytest.raises(Exception, match="ran longer than 0.2 s"):
        backend.client.eval(script + " while true do end", 0)
    assert backend.client.eval("return 7", 0) == 7  # the next script runs as before


def test_a_script_cannot_reach_debug_or_python():
    client = FakeRedisBackend().client
    for name in ("debug", "getfenv", "setfenv", "python", "io", "require", "loadfile"):
        with pytest.raises(Exception, match=f"nonexistent global variable '{name}'"):
            client.eval(f"return type({name})", 0)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SIMULATOR_SCRIPT_MEMORY_MIB", "0.001"),
        ("SIMULATOR_SCRIPT_MEMORY_MIB", "1e300"),
        ("SIMULATOR_SCRIPT_TIME_S", "0.001"),
        ("SIMULATOR_SCRIPT_TIME_S", "1e300"),
    ],
)
def test_limits_out_of_range_are_refused_naming_the_variable(variable, value, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "burst"],
        cwd=tmp_path,
        env=_env(**{variable: value}),
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert f"{variable}='{value}'" in done.stderr
    with pytest.raises(ConfigError, match="script_memory_mib"):
        FakeRedisBackend(script_memory_mib=0.001)


def test_running_out_of_lua_memory_is_one_message_naming_the_script(tmp_path):
    path = _script(
        tmp_path,
        "hog",
        "local t = {}\nfor i = 1, 1e9 do t[i] = i end\nreturn {1}\n",
    )
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "burst", "--script", f"hog={path}"],
        cwd=tmp_path,
        env=_env(SIMULATOR_SCRIPT_MEMORY_MIB="64"),
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert done.returncode == 2, done.stderr
    assert "PANIC" not in done.stderr and "Traceback" not in done.stderr
    assert str(path) in done.stderr and "used more than 64 MiB of Lua memory" in done.stderr


def test_a_reply_of_seven_million_elements_comes_back_whole():
    client = FakeRedisBackend().client
    reply = client.eval("local t = {} for i = 1, 7000000 do t[i] = i % 10 end return t", 0)
    assert len(reply) == 7_000_000 and reply[:3] == [1, 2, 3] and reply[-1] == 0
