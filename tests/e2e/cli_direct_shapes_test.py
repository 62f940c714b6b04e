"""End-to-end: the eslease tool's direct mode (--es URL) with lock shapes, against the
es-emulator as a separate process, as users run it: semaphores (--capacity N), read-write
locks (Shared readers, --exclusive writers) and lock sets (several LOCK arguments),
including a holder killed with SIGKILL in the middle of its set. Every command records when it
starts and ends; the checks are on those critical sections."""

import json
import os
import random
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from intervals import most_at_once, overlaps  # noqa: E402
from controller_env import Process, WithEsEmulator, wait_for  # noqa: E402

BIN = None
WAIT = "180s"  # --wait of every claim: long enough for a loaded machine


def critical_section(record, seconds):
    """A command that appends 'start T' and 'end T' (wall seconds) to `record`."""
    return ["sh", "-c", 'echo "start $(date +%%s.%%N)" >> %s; sleep %s; echo "end $(date +%%s.%%N)" >> %s'
            % (record, seconds, record)]


def sections(record):
    """[(start, end)] from a record file; an unfinished section ends at +inf."""
    out = []
    if not os.path.exists(record):
        return out
    start = None
    with open(record) as f:
        for line in f:
            word, _, value = line.strip().partition(" ")
            if word == "start":
                start = float(value)
            elif word == "end" and start is not None:
                out.append((start, float(value)))
                start = None
    if start is not None:
        out.append((start, float("inf")))
    return out


class DirectShapes(WithEsEmulator, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.start_es_emulator(BIN, "eslease-shapes-e2e-")

    def eslease(self, *args):
        return [os.path.join(BIN, "eslease"), "--es", self.url, "--index", "eslease-shapes-e2e"] + list(args)

    def start_all(self, name, claims):
        """Starts one `eslease run` per (args, seconds); returns [(process, record)]."""
        started = []
        for i, (args, seconds) in enumerate(claims):
            record = os.path.join(self.dir.name, "%s-%d.record" % (name, i))
            argv = self.eslease("run", *args, "--wait", WAIT, "--", *critical_section(record, seconds))
            started.append((Process("%s-%d" % (name, i), argv, self.dir.name), record))
        return started

    def wait_all(self, started, timeout=240):
        for process, _ in started:
            deadline = time.monotonic() + timeout
            while process.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            code = process.stop()
            self.assertEqual(code, 0, "%s: %s" % (process.name, process.text()[-2000:]))

    def test_a_semaphore_runs_at_most_its_capacity_at_once(self):
        started = self.start_all("sem", [(["sem", "--capacity", "3"], 1.0)] * 10)
        self.wait_all(started)
        intervals = [s for _, record in started for s in sections(record)]
        self.assertEqual(len(intervals), 10, "every command ran once")
        self.assertLessEqual(most_at_once(intervals), 3)
        self.assertGreaterEqual(most_at_once(intervals), 2, "shared holders hold side by side")

    def test_readers_overlap_and_a_writer_runs_alone(self):
        readers = [(["rw", "--capacity", "3"], 1.0)] * 2 + [(["rw", "--capacity", "3", "--shared"], 1.0)] * 2
        claims = readers + [(["rw", "--capacity", "3", "--exclusive"], 0.5)] * 2
        started = self.start_all("rw", claims)
        self.wait_all(started)
        readers = [s for _, record in started[:4] for s in sections(record)]
        writers = [s for _, record in started[4:] for s in sections(record)]
        self.assertEqual((len(readers), len(writers)), (4, 2))
        for w in writers:
            for other in readers + [x for x in writers if x is not w]:
                self.assertFalse(overlaps(w, other), "a writer ran beside another holder: %s %s" % (w, other))
        self.assertLessEqual(most_at_once(readers), 3)

    def test_status_counts_the_slots_taken(self):
        def tool(*args):
            out = subprocess.run(self.eslease(*args), capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout
        tool("acquire", "counted", "--capacity", "2", "--exclusive", "--holder", "writer")
        self.assertIn("default/counted (2/2)", tool("status", "counted"), "one writer on both slots")
        holders = json.loads(tool("status", "counted", "-o", "json"))["locks"][0]["holders"]
        self.assertEqual([(h["holder"], h["access"], h["slots"]) for h in holders], [("writer", "Exclusive", [0, 1])])
        tool("release", "counted", "--holder", "writer")
        tool("acquire", "counted", "--capacity", "2", "--holder", "reader")
        self.assertIn("default/counted (1/2)", tool("status", "counted"), "one reader on one slot")
        tool("release", "counted", "--holder", "reader")
        self.assertIn("is free", tool("status", "counted"))

    def test_sets_never_share_a_lock_and_survive_a_holder_killed_mid_set(self):
        rng = random.Random(26)
        locks = ["set-%d" % i for i in range(8)]
        # The victim takes its set first and holds it in a long command; it is killed there.
        victim_set = ["set-0", "set-1", "set-2"]
        victim_record = os.path.join(self.dir.name, "victim.record")
        # On a loaded machine the victim may lose its set before it is killed (its renewals late):
        # its command is then stopped with SIGTERM, and records when.
        command = ('echo $$ > {r}.pid; echo "start $(date +%s.%N)" >> {r}; '
                   'trap \'echo "end $(date +%s.%N)" >> {r}; exit 143\' TERM; sleep 600 & wait').format(r=victim_record)
        victim = Process("victim", self.eslease("run", *victim_set, "--ttl", "3s", "--", "sh", "-c", command),
                         self.dir.name)
        wait_for(lambda: os.path.exists(victim_record + ".pid") and sections(victim_record), 60, "the victim to hold")
        claims = [(sorted(rng.sample(locks, 3)), 0.2) for _ in range(19)]
        started = self.start_all("sets", claims)
        time.sleep(0.5)
        killed_at = time.time()
        os.kill(victim.proc.pid, signal.SIGKILL)  # the tool dies; its command is stopped with it
        with open(victim_record + ".pid") as f:
            os.killpg(int(f.read().strip()), signal.SIGKILL)
        victim.stop(sig_kill=True)
        self.wait_all(started)
        held = {lock: [] for lock in locks}
        for (args, _), (_, record) in zip(claims, started):
            got = sections(record)
            self.assertEqual(len(got), 1, record)
            for lock in args:
                held[lock].append(got[0])
        victim_start, victim_end = sections(victim_record)[0]
        for lock in victim_set:
            held[lock].append((victim_start, min(victim_end, killed_at)))
        for lock, intervals in held.items():
            self.assertEqual(most_at_once(intervals), 1 if intervals else 0,
                             "lock %s had two holders: %s" % (lock, sorted(intervals)))
        out = subprocess.run(self.eslease("status", "set-0"), capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)


if __name__ == "__main__":
    BIN = sys.argv.pop(1)
    sys.argv.pop(1)  # the source directory, unused
    unittest.main(verbosity=2)
