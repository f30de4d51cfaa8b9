"""One peer program as the driver sees it: a process whose stdout lines
(WORD TIME_US ...) queue up, with stdin for "resign"."""
import os
import queue
import signal
import subprocess
import threading
import time

from driver.common import now_us


class Peer:
    """One peer process: its stdout lines on a queue, stdin for "resign"."""

    def __init__(self, argv, label):
        self.label = label
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = queue.Queue()
        self.seen = {}
        self.log = []  # every line read, in order
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.split())
        self.lines.put(["EOF"])

    def _read_err(self):
        for line in self.proc.stderr:
            self.err.append(line.rstrip())

    def wait_for(self, word, timeout):
        """The fields of the first line starting with word (None on timeout or exit)."""
        if word in self.seen:
            return self.seen[word]
        if "EOF" in self.seen:  # the process is gone: no wait (many clients, one by one)
            return None
        end = time.time() + timeout
        while time.time() < end:
            try:
                fields = self.lines.get(timeout=max(0.001, end - time.time()))
            except queue.Empty:
                break
            self.seen.setdefault(fields[0], fields)
            self.log.append(fields)
            if fields[0] == word:
                return fields
            if fields[0] == "EOF":
                break
        return None

    def wait_after(self, word, t_us, timeout):
        """The first line starting with word whose time (its second field)
        is t_us or later, read before or within timeout (None if none)."""
        end = time.time() + timeout
        while True:
            try:  # every line already there, then the log
                while True:
                    fields = self.lines.get_nowait()
                    self.seen.setdefault(fields[0], fields)
                    self.log.append(fields)
            except queue.Empty:
                pass
            for fields in self.log:
                if fields[0] == word and len(fields) > 1 and fields[1].isdigit() and int(fields[1]) >= t_us:
                    return fields
            if "EOF" in self.seen or time.time() >= end:
                return None
            try:
                fields = self.lines.get(timeout=max(0.001, end - time.time()))
            except queue.Empty:
                continue
            self.seen.setdefault(fields[0], fields)
            self.log.append(fields)

    def resign(self, successor=""):
        t = now_us()
        try:
            self.proc.stdin.write(f"resign {successor}\n" if successor else "resign\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        return t

    def signal(self, sig):
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace=5.0):
        """Waits for the process after closing stdin; SIGKILL after grace."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def state(self):
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "gone"

    def fail(self, what):
        raise RuntimeError(f"{self.label}: {what}; stderr: {' | '.join(self.err[-5:])}")
