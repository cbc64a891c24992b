"""A small client of headless Chromium's DevTools protocol over its pipe
(``--remote-debugging-pipe``: JSON messages ended by NUL on file descriptors 3 and 4),
for tests/test_page.py. A pipe, not a websocket: no listening port and no package."""
import json
import os
import select
import shutil
import subprocess
import time

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe")


def executable():
    """The installed Chromium (.ci/run installs Debian's), or None."""
    return next(filter(None, map(shutil.which, ("chromium", "chromium-headless-shell"))), None)


class Browser:
    """One Chromium process; ``call`` sends a command and returns its result, ``events``
    holds every event received so far (method, params, sessionId)."""

    def __init__(self, path, profile):
        commands, self._to_browser = os.pipe()
        self._from_browser, replies = os.pipe()

        def descriptors():  # the child reads commands on fd 3 and writes replies on fd 4
            # (dup2 makes them inheritable; Python's own descriptors are not inherited)
            high_commands, high_replies = os.dup(commands), os.dup(replies)
            os.dup2(high_commands, 3)
            os.dup2(high_replies, 4)

        self.process = subprocess.Popen([path, *FLAGS, f"--user-data-dir={profile}",
                                         "about:blank"], preexec_fn=descriptors,
                                        close_fds=False,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands)
        os.close(replies)
        self._buffer, self._next, self.events = b"", 0, []

    def call(self, method, session=None, timeout=30, **params):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def wait_for(self, predicate, timeout=30):
        """The first event (already received or next) for which ``predicate`` is true."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if predicate(event):
                    return event
            seen = len(self.events)
            self._receive(deadline)

    def _receive(self, deadline):
        """The next message; events are also appended to ``events``."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "method" in message:
            self.events.append(message)
        return message

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
