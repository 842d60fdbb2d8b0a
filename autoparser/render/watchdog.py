"""Budgets for untrusted work: CPU time, wall time and memory growth, watched by one daemon thread.

A render or compile runs inside ``budget``; the watchdog interrupts it by injecting ``RenderTimeout``
into its thread. The limits live here because only the watchdog enforces them.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import os
import sys
import threading
import time
from contextlib import contextmanager

from ..errors import TemplateError

MAX_GROWTH = 512 << 20  # bytes of resident memory a render may add
TIME_BUDGET = float(os.environ.get("AUTOPARSER_TIME_BUDGET", "2.0"))  # seconds, for a compile, a lone render or one analysis

# A running budget is looked at every POLL seconds, the first time FIRST_CHECK after it starts. A look needs
# the interpreter lock, which the watchdog then waits for and wrests from the watched thread (on every
# release a regex search makes): looking at every budget from its start cost a cold infer 3-4% of its CPU
# time, its dozen budgets of 1-15 ms each waking the watchdog (0.85 ms of its thread's CPU per infer; 0.05
# now). Most budgets end before their first look; one that runs on is looked at as often as before, so a
# deadline still fires within POLL of passing (every budget is 0.1 s or more), and memory growth is first
# measured 50 ms in (the guards bound what any single step allocates; MAX_GROWTH is a backstop).
POLL = 0.005
FIRST_CHECK = 0.05


class RenderTimeout(BaseException):
    """Injected into the rendering thread by the watchdog; BaseException so templates can't swallow it."""


_local = threading.local()  # the budget this thread runs under, if any


def active() -> bool:
    """Whether this thread already runs under a budget (an inner one would be a no-op)."""
    return getattr(_local, "entry", None) is not None


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss() -> int:
    """Resident bytes, read unbuffered (a buffered text file took three times as long, at every budget)."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        return 0
    try:
        return int(os.read(fd, 256).split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0
    finally:
        os.close(fd)


class _Budget:
    """One active budget: whose thread, its deadlines, and what to say when one passes."""

    __slots__ = ("thread", "clock", "cpu_deadline", "wall_deadline", "due", "start_rss", "late", "hungry", "collecting", "fired_at")

    def __init__(self, seconds: float, what: str, doing: str):
        self.thread = threading.get_ident()
        self.clock = _thread_clock()
        self.cpu_deadline = (_cpu_time(self.clock) if self.clock is not None else 0.0) + seconds
        now = time.monotonic()
        self.wall_deadline = now + seconds * (WALL_FACTOR if self.clock is not None else 1)
        self.due = now + FIRST_CHECK  # when the watchdog first looks at it (``_Watchdog._run``)
        self.start_rss = _rss()
        self.late = f"{what} took longer than {seconds:g} s to {doing}"
        self.hungry = f"{what} used more than {MAX_GROWTH >> 20} MB of memory to {doing}"
        self.collecting = 0.0  # when a garbage collection in this thread began (0: none running)
        self.fired_at = 0.0

    def overdue(self, now: float) -> bool:
        if self.collecting:
            return False
        return now > self.wall_deadline or (self.clock is not None and _cpu_time(self.clock) > self.cpu_deadline)


class _Watchdog:
    """One daemon thread per process watches every active budget: starting a thread per budget cost more than
    a whole analysis's renders. It sleeps while no budget is active."""

    def __init__(self):
        self.lock = threading.Lock()
        # Held while no budget is active: the idle watchdog blocks on it until ``add`` releases it. A bare
        # lock and ``time.sleep`` between polls, not a Condition: its wait cost 27 us of CPU per poll.
        self.bell = threading.Lock()
        self.bell.acquire()
        self.active: dict[int, _Budget] = {}
        self.thread: threading.Thread | None = None
        self.fired: dict[int, str] = {}

    def add(self, token: int, entry: _Budget) -> None:
        with self.lock:
            idle = not self.active
            self.active[token] = entry
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, daemon=True, name="autoparser-watchdog")
                self.thread.start()
            if idle and self.bell.locked():  # a polling watchdog sees the new budget when it is due
                self.bell.release()

    def remove(self, token: int) -> str | None:
        """Stop watching; the reason if the watchdog fired (under the lock, so it cannot fire after this)."""
        with self.lock:
            self.active.pop(token, None)
            return self.fired.pop(token, None)

    def _run(self) -> None:
        while True:
            with self.lock:
                due = min([b.due for b in self.active.values()], default=None)
            if due is None:
                self.bell.acquire()  # until ``add`` rings (at once if it rang since)
                continue
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # budgets started meanwhile are due later; one that ended is not looked at
                continue
            with self.lock:
                now, rss = time.monotonic(), None
                for token, b in list(self.active.items()):
                    if b.due > now:
                        continue
                    b.due = now + POLL
                    if b.fired_at:  # fired, still running: the exception was swallowed (a gc callback); again
                        if now - b.fired_at > 0.5:
                            b.fired_at = now
                            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(b.thread), ctypes.py_object(RenderTimeout))
                        continue
                    reason = None
                    if b.overdue(now):
                        reason = b.late
                    elif b.start_rss:
                        rss = _rss() if rss is None else rss
                        if rss - b.start_rss > MAX_GROWTH:
                            reason = b.hungry
                    if reason:
                        b.fired_at = now
                        self.fired[token] = reason
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(b.thread), ctypes.py_object(RenderTimeout))


_watchdog = _Watchdog()
if hasattr(os, "register_at_fork"):  # a forked child has no watchdog thread, and its lock may be held
    os.register_at_fork(after_in_child=lambda: globals().__setitem__("_watchdog", _Watchdog()))
_tokens = itertools.count()


# A budget counts the thread's CPU time; wall time is cut off at this multiple, so that what the error
# says ("took longer than 2 s") holds within 2x on a loaded machine (the firing and unwinding take the
# rest). It was 5: on a machine running other work a template was stopped after 7-16 s. The heaviest
# analysis of corpus + wild + wild2 takes 0.15 s of CPU and 0.4 s of wall time on a loaded machine.
WALL_FACTOR = 1.5


def _thread_clock() -> int | None:
    """This thread's CPU-time clock, where the platform has one."""
    try:
        return time.pthread_getcpuclockid(threading.get_ident())
    except (AttributeError, OSError):
        return None


def _cpu_time(clock: int) -> float:
    try:
        return time.clock_gettime(clock)
    except OSError:  # the thread is gone
        return 0.0


def _on_collection(phase: str, info: dict) -> None:
    """A full collection is the process's heap at work, not the template's: one of a large heap (a test
    process, a server) took 0.25 s here and several times that on a loaded CI box, and once pushed a
    20 ms render past its budget. Its time moves the budget's deadlines on. Young collections are not
    moved for: they walk only what was allocated since the last one, the template's own garbage, and a
    template that recurses building lists of lists spent a fifth of its time in them (its stop came
    0.4 s past the wall cut-off). Runs inside the collector: no locks, no allocation beyond floats."""
    b = getattr(_local, "entry", None)
    if b is None or info.get("generation") != 2:
        return
    now = time.monotonic()
    if phase == "start":
        b.collecting = now
    elif b.collecting:
        paused = now - b.collecting
        b.cpu_deadline += paused
        b.wall_deadline += paused
        b.collecting = 0.0


gc.callbacks.append(_on_collection)


def _dropped_stop(args) -> bool:
    """For ``sys.unraisablehook``, which gets what Python cannot raise: an exception leaving a gc callback,
    ``__del__`` or a weakref callback is printed ("Exception ignored in: …") and dropped. The watchdog's stop
    lands there when its thread is inside one, and the CLI's one error line then came second to a
    traceback. The stop is ours and says nothing to anyone: it is dropped silently, and the budget is
    marked to be stopped again at the watchdog's next poll (it waited half a second, as for a stop that
    template code swallowed)."""
    if not (isinstance(args.exc_value, RenderTimeout) or args.exc_type is RenderTimeout):
        return False
    b = getattr(_local, "entry", None)
    if b is not None and b.fired_at:
        b.fired_at = 1.0  # fired long ago: the next poll fires again
    return True


def _hook_unraisable() -> None:
    """Put ``_dropped_stop`` in front of whatever hook is installed now (a test runner or an application may
    have installed its own since this module was imported); everything else goes on to that hook. Each
    installation closes over the hook it found, so hooks that chain to their predecessor never loop."""
    found = sys.unraisablehook
    if getattr(found, "autoparser_stop", False):
        return

    def hook(args) -> None:
        if not _dropped_stop(args):
            found(args)

    hook.autoparser_stop = True
    sys.unraisablehook = hook


_hook_unraisable()


@contextmanager
def budget(seconds: float, what: str = "template", *, doing: str = "render"):
    """Bound the enclosed work by CPU time and memory growth.

    CPU time of this thread, not wall time: a template is stopped for the work it does, not for a loaded
    machine (a CI box under load ran 3x slower and renders that take 0.3 s hit a 2 s wall budget). Wall
    time still stops it at ``WALL_FACTOR`` times the budget (the promise: within twice the budget the
    error states, however loaded the machine), and is the budget where no thread clock exists. Full
    garbage collections count for neither (``_on_collection``).

    The watchdog injects ``RenderTimeout`` into this thread when a deadline passes or resident memory
    grows by more than ``MAX_GROWTH``; jinja's compiled code is Python, so the exception lands at the next
    bytecode. Nested budgets are no-ops (the outer one governs).
    """
    if active():
        yield
        return
    token, dog = next(_tokens), _watchdog
    _hook_unraisable()
    entry = _local.entry = _Budget(seconds, what, doing)
    fired = None
    try:
        try:
            dog.add(token, entry)
            yield
        finally:
            fired = dog.remove(token)
    except RenderTimeout:
        raise TemplateError(fired or f"{what} exceeded its budget") from None
    finally:
        _local.entry = None
