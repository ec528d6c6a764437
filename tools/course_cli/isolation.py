"""Running a student's code (its compiler run, its test programs) with as little reach as this
machine allows: `./course grade` and the autograder bundles run every command of a submission
through Sandbox.run().

Three levels, detected at run time (strongest first; `--isolation` can ask for a weaker one):

  namespaces  Linux user, mount, PID, network, IPC and UTS namespaces through util-linux
              `unshare` (no setuid helper, no root needed where unprivileged user namespaces are
              allowed). The command sees a private root: the system folders (/usr, /etc, /opt,
              the /lib and /bin links), the course repository and the template build tree, and
              the tools the build names, all read-only; solutions/, .git, the build folders, the
              class's submissions, the other submissions' folders and the grade files are not
              there at all (an empty folder covers each one that lies inside a visible folder).
              Only its own work folder is writable (and read-only while its tests run), /tmp is
              a small private tmpfs, there is no network (a loopback that is down), its
              processes see only each other, it holds no capabilities (so it cannot remount
              anything), and no_new_privs is set. At the limit the whole PID namespace is killed.
  user        Where namespaces are refused but the grader runs as root (a Docker container
              without CAP_SYS_ADMIN, such as Gradescope's): each submission runs as a user id of
              its own (60000 + n) with no capabilities and no_new_privs, in a work folder only
              that id can open; the grade files and the other submissions' folders are closed
              to it. It can read what the machine lets every user read, and reach the network.
  process     Nothing stronger is available: the same user as the grader, in a process group
              of its own, killed at the limit, with resource limits. It can read and write what
              the grader can. `./course grade` says so in every grade and on the terminal.

Every level adds resource limits (prlimit: CPU seconds, file size, no core files, open files;
address space for the compiler and for test runs on machines without a GPU) and a clean
environment. None of them limits GPU memory or GPU time, and none is a defence against a kernel
exploit: they keep an honest mistake or an ordinary malicious submission away from the grader,
the grade files and the other students, which is what a classroom grader needs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

LEVELS = ("namespaces", "user", "process")
INSIDE_WORK = "/course-grade/work"  # where a submission's work folder appears in a private root
FIRST_UID = 60000  # level "user": submission n runs as FIRST_UID + n
SYSTEM_DIRS = ("/usr", "/etc", "/opt")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("null", "zero", "full", "random", "urandom")
KEEP_HEAD = 64 * 1024  # output kept from the start of a command ...
KEEP_TAIL = 192 * 1024  # ... and from its end; the middle of a flood is dropped

DESCRIPTIONS = {
    "namespaces": (
        "namespaces: a private root (user, mount, PID, network, IPC namespaces via unshare); "
        "the system, the course and the template build read-only; solutions/, the other "
        "submissions and the grade files absent; only its own work folder writable; no "
        "network; no capabilities; killed with its PID namespace at the limit"),
    "user": (
        "user: its own user id with no capabilities, in a work folder only it can open; the "
        "grade files and the other submissions closed to it; it can read what every user of "
        "this machine can, and reach the network; killed by process group at the limit"),
    "process": (
        "process: NOT isolated: the grader's own user in a process group of its own, killed at "
        "the limit, with resource limits; it can read and write whatever the grader can"),
}


@dataclass
class Limits:
    """prlimit values for one command (None: not limited)."""

    cpu_s: int | None = None
    file_bytes: int | None = 2 << 30
    address_bytes: int | None = None
    open_files: int | None = 4096

    def prlimit_args(self) -> list[str]:
        args = ["--core=0"]
        if self.cpu_s is not None:
            args.append(f"--cpu={self.cpu_s}")
        if self.file_bytes is not None:
            args.append(f"--fsize={self.file_bytes}")
        if self.address_bytes is not None:
            args.append(f"--as={self.address_bytes}")
        if self.open_files is not None:
            args.append(f"--nofile={self.open_files}")
        return args


@dataclass
class Outcome:
    """What a sandboxed command did: its exit status (None: killed at the time limit; a
    negative number: the signal that ended it), its output (head and tail when it flooded)
    and how long it ran."""

    status: int | None
    output: str
    seconds: float
    truncated: bool = False

    @property
    def timed_out(self) -> bool:
        return self.status is None


@dataclass
class Sandbox:
    """One submission's view of the machine. `work` is the submission's work folder (host
    path); `visible` the host folders its commands may read; `hidden` the host folders that
    must not be readable even where they lie inside a visible one; `devices` extra device
    nodes (the GPU's)."""

    level: str
    work: Path
    visible: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    devices: list[Path] = field(default_factory=list)
    uid: int | None = None  # level "user"
    path_dirs: list[str] = field(default_factory=list)

    # ---- paths as the command sees them

    def inside(self, host_path: Path) -> str:
        """`host_path` (inside the work folder) as the sandboxed command names it."""
        host_path = Path(host_path)
        if self.level != "namespaces":
            return str(host_path)
        try:
            return str(Path(INSIDE_WORK) / host_path.relative_to(self.work))
        except ValueError:
            return str(host_path)

    # ---- running

    def run(self, argv: list[str], *, timeout: float | None, cwd: Path | str | None = None,
            env: dict[str, str] | None = None, limits: Limits | None = None,
            writable: bool = True, on_line=None,
            also_writable: list[Path] | None = None) -> Outcome:
        """Runs `argv` in the sandbox. `cwd` is a host path (the work folder by default);
        `writable` False makes the work folder read-only for this command. `on_line` sees
        every line of output as it comes (the kept output may drop the middle of a flood)."""
        limits = limits or Limits()
        environment = self._environment(env or {})
        cwd = Path(cwd) if cwd is not None else self.work
        if self.level == "namespaces":
            script = self._namespace_script(cwd, writable, also_writable or [])
            command = (["unshare", "--user", "--map-root-user", "--mount", "--pid", "--net",
                        "--ipc", "--uts", "--fork", "--kill-child", "--", "/bin/sh", "-c", script,
                        "course-grade"] + _tail(environment, limits, argv))
            host_cwd = "/"
        elif self.level == "user":
            command = (["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}",
                        "--clear-groups", "--no-new-privs", "--inh-caps=-all",
                        "--bounding-set=-all", "--"] + _tail(environment, limits, argv))
            host_cwd = str(cwd)
        else:
            command = _tail(environment, limits, argv)
            host_cwd = str(cwd)
        return run_bounded(command, timeout, cwd=host_cwd, on_line=on_line)

    def prepare(self) -> None:
        """Creates the work folder with the owner and mode the level needs."""
        self.work.mkdir(parents=True, exist_ok=True)
        if self.level == "user" and self.uid is not None:
            for path in [self.work, *self.work.rglob("*")]:
                os.chown(path, self.uid, self.uid)
            os.chmod(self.work, 0o700)

    def give_back(self) -> None:
        """After the last command: the work folder belongs to the grader again."""
        if self.level == "user" and self.work.exists():
            for path in [self.work, *self.work.rglob("*")]:
                try:
                    os.chown(path, os.getuid(), os.getgid(), follow_symlinks=False)
                except OSError:
                    pass

    def _environment(self, extra: dict[str, str]) -> dict[str, str]:
        path = ":".join(dict.fromkeys([*self.path_dirs, "/usr/local/sbin", "/usr/local/bin",
                                       "/usr/sbin", "/usr/bin", "/sbin", "/bin"]))
        home = "/tmp" if self.level == "namespaces" else str(self.work)
        base = {"PATH": path, "HOME": home, "TMPDIR": "/tmp" if self.level == "namespaces"
                else os.environ.get("TMPDIR", "/tmp"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        base.update(extra)
        return base

    def _namespace_script(self, cwd: Path, writable: bool, also_writable: list[Path]) -> str:
        """The shell script that builds the private root and starts the command."""
        root = str(self.work.parent / f".{self.work.name}.root")
        lines = [f"R={shlex.quote(root)}", *_SCRIPT_HEAD]
        for name in SYSTEM_LINKS:
            if os.path.islink(name):
                lines.append(f'ln -s {shlex.quote(os.readlink(name))} "$R{name}"')
            elif os.path.isdir(name):
                lines.append(f"ro {name} {name}")
        # /tmp first: a tool the build names may live under it (bound below, inside it).
        lines += ['mkdir -p "$R/tmp"', 'mount -t tmpfs -o size=1g,mode=1777 tmp "$R/tmp"']
        lines += self._view_lines()
        for path in also_writable:
            quoted = shlex.quote(str(path))
            lines.append(f'mkdir -p "$R"{quoted}; mount --bind {quoted} "$R"{quoted}')
        lines += [f'mkdir -p "$R{INSIDE_WORK}"',
                  f'mount --bind {shlex.quote(str(self.work))} "$R{INSIDE_WORK}"']
        if not writable:
            lines.append(f'mount -o remount,bind,ro "$R{INSIDE_WORK}"')
        lines += self._device_lines()
        where = self.inside(cwd) if _inside(cwd, self.work) else str(cwd)
        lines += [line.replace("@CWD@", shlex.quote(where)) for line in _SCRIPT_TAIL]
        return "\n".join(lines) + "\n"

    def _view_lines(self) -> list[str]:
        """The read-only folders, outermost first, and the empty folders over the hidden ones;
        a visible folder inside a hidden one (the template inside build/) is bound again after
        the folder that hides it (deeper paths come later)."""
        ops: list[tuple[int, str]] = []
        visible = _outermost([p for p in [*map(Path, SYSTEM_DIRS), *self.visible] if p.exists()])
        again = [p for p in self.visible if p.exists() and p not in visible and
                 any(_inside(p, h) for h in self.hidden)]
        for path in visible + again:
            ops.append((len(path.parts), f"ro {shlex.quote(str(path))} {shlex.quote(str(path))}"))
        for path in self.hidden:
            if any(_inside(path, v) for v in visible):
                ops.append((len(path.parts), f"hide {shlex.quote(str(path))}"))
        return [op for _, op in sorted(ops, key=lambda item: item[0])]

    def _device_lines(self) -> list[str]:
        lines = ['mkdir -p "$R/dev" "$R/proc" "$R/sys"']
        for name in DEVICES:
            lines.append(f'if [ -e /dev/{name} ]; then : > "$R/dev/{name}"; '
                         f'mount --bind /dev/{name} "$R/dev/{name}"; fi')
        lines.append('mkdir -p "$R/dev/shm"; mount -t tmpfs -o size=256m,mode=1777 shm "$R/dev/shm"')
        for device in self.devices:  # the GPU's nodes
            quoted = shlex.quote(str(device))
            lines.append(f'if [ -d {quoted} ]; then mkdir -p "$R"{quoted}; mount --rbind {quoted} '
                         f'"$R"{quoted}; elif [ -e {quoted} ]; then : > "$R"{quoted}; '
                         f'mount --bind {quoted} "$R"{quoted}; fi')
        return lines


_SCRIPT_HEAD = [
    "set -eu",
    'mkdir -p "$R"',
    'mount -t tmpfs -o size=8m,mode=0755 course-grade "$R"',
    # ro SRC DST: a read-only bind of SRC (with its submounts) at DST in the new root.
    "ro() {",
    '  if [ -d "$1" ]; then mkdir -p "$R$2"; else mkdir -p "$(dirname "$R$2")"; : > "$R$2"; fi',
    '  mount --rbind "$1" "$R$2"',
    '  mount -o remount,bind,ro "$R$2"',
    "  for m in $(awk -v d=\"$R$2/\" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo); "
    'do mount -o remount,bind,ro "$m" || true; done',
    "}",
    # hide DST: an empty tmpfs over a folder that lies inside a visible one.
    'hide() { if [ -d "$R$1" ]; then mount -t tmpfs -o size=64k,mode=0755 hidden "$R$1"; fi; }',
]
_SCRIPT_TAIL = [
    'mount --rbind /sys "$R/sys"; mount -o remount,bind,ro "$R/sys"',
    "for m in $(awk -v d=\"$R/sys/\" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo); "
    'do mount -o remount,bind,ro "$m" || true; done',
    'mount -t proc -o ro,nosuid,nodev,noexec proc "$R/proc"',
    'mkdir "$R/.old"',
    'cd "$R"',
    "pivot_root . .old",
    "umount -l /.old",
    "rmdir /.old",
    "cd @CWD@",
    # No capability survives into the command (it cannot remount, unshare or chroot again),
    # and nothing it runs can gain privileges.
    'exec setpriv --no-new-privs --inh-caps=-all --bounding-set=-all -- "$@"',
]


def _tail(environment: dict[str, str], limits: Limits, argv: list[str]) -> list[str]:
    """`env -i K=V ... prlimit ... -- argv`: a clean environment and the limits."""
    return (["env", "-i", *[f"{k}={v}" for k, v in environment.items()], "prlimit",
             *limits.prlimit_args(), "--", *argv])


def _inside(path: Path, folder: Path) -> bool:
    try:
        Path(path).relative_to(folder)
        return True
    except ValueError:
        return False


def _outermost(paths: list[Path]) -> list[Path]:
    """The paths that no other path of the list contains, without duplicates."""
    unique = sorted(set(Path(p) for p in paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return kept


# ---------------------------------------------------------------------------- running


def run_bounded(command: list[str], timeout: float | None, *, cwd: str | None = None,
                on_line=None, env: dict[str, str] | None = None) -> Outcome:
    """Runs `command` in a session of its own, stdout and stderr together; kills the whole
    process group at `timeout` (status None). Keeps the first KEEP_HEAD and the last KEEP_TAIL
    bytes of the output, so a submission that prints without end cannot fill the grader's
    memory; `on_line` sees every line."""
    start = time.monotonic()
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                   start_new_session=True)
    except OSError as error:
        return Outcome(127, f"cannot run {command[0]}: {error}", 0.0)
    head = bytearray()
    tail = bytearray()
    dropped = [False]

    def reader() -> None:
        pending = b""
        for chunk in iter(lambda: process.stdout.read1(65536), b""):
            if len(head) < KEEP_HEAD:
                take = chunk[:KEEP_HEAD - len(head)]
                head.extend(take)
                rest = chunk[len(take):]
            else:
                rest = chunk
            if rest:
                tail.extend(rest)
                if len(tail) > KEEP_TAIL:
                    del tail[:len(tail) - KEEP_TAIL]
                    dropped[0] = True
            if on_line is not None:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                if len(pending) > 65536:  # a line without end: pass it on in pieces
                    complete.append(pending)
                    pending = b""
                for line in complete:
                    on_line(line.decode("utf-8", "replace"))
        if on_line is not None and pending:
            on_line(pending.decode("utf-8", "replace"))

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    status: int | None
    try:
        status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        status = None
        _kill_group(process)
        process.wait()
    # The command is over; what it left running in its group (a daemon) goes too.
    _kill_group(process)
    thread.join(timeout=10)
    process.stdout.close()
    text = head.decode("utf-8", "replace")
    if dropped[0]:
        text += "\n[... output cut ...]\n"
    text += tail.decode("utf-8", "replace")
    return Outcome(status, text, time.monotonic() - start, dropped[0])


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# -------------------------------------------------------------------------- detection


def _namespaces_work(probe_dir: Path) -> bool:
    """Whether a namespace sandbox can start here: one runs `true` in a throwaway folder."""
    if not (shutil.which("unshare") and shutil.which("setpriv") and shutil.which("prlimit")):
        return False
    probe = Sandbox("namespaces", probe_dir / "probe")
    probe.prepare()
    outcome = probe.run(["true"], timeout=60)
    return outcome.status == 0


def _user_ids_work(probe_dir: Path) -> bool:
    if os.geteuid() != 0 or not (shutil.which("setpriv") and shutil.which("prlimit")):
        return False
    probe = Sandbox("user", probe_dir / "probe-user", uid=FIRST_UID)
    probe.prepare()
    outcome = probe.run(["true"], timeout=60)
    probe.give_back()
    return outcome.status == 0


def detect(probe_dir: Path, wanted: str = "auto") -> tuple[str, str]:
    """The strongest level this machine allows (or `wanted`, if it works here), and why a
    stronger one was not used."""
    probe_dir.mkdir(parents=True, exist_ok=True)
    notes = []
    order = LEVELS if wanted == "auto" else LEVELS[LEVELS.index(wanted):]
    for level in order:
        if level == "namespaces":
            if _namespaces_work(probe_dir):
                return level, ""
            notes.append("unprivileged namespaces are not available here (unshare --user "
                         "--mount --pid --net failed)")
        elif level == "user":
            if _user_ids_work(probe_dir):
                return level, "; ".join(notes)
            notes.append("the grader does not run as root, so it cannot give submissions "
                         "user ids of their own")
        else:
            return level, "; ".join(notes)
    return "process", "; ".join(notes)


def python_dirs() -> list[Path]:
    """The folders this Python interpreter needs (sanitize.py runs in the sandbox)."""
    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    return sorted(d for d in dirs if d.exists())
