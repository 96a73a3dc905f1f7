#!/usr/bin/env python3
"""robustness.py: issue 14's figures, measured.  What annlab does when its
files are corrupt, its processes die, its disk fills or two runs meet.

    scripts/robustness.py [--seeds 3] [--work DIR] [--keep] [--annlab ./annlab]

Categories, each tried several times with seeded faults:

  corrupt <engine> <file>    one bit flipped at a seeded offset of one index
                             file, the index opened and searched directly by
                             `annlab cell` with build.json's digest list
                             removed from the copy (the engine's own checks
                             only; LMDB's pages carry no checksums, so a
                             flipped B-tree byte can crash mdb_get: that is
                             what the digests, checked by `annlab run` and
                             `annlab cell`, are for)
  cell corrupt <engine>      the same flip with build.json intact: `annlab
                             cell` checks the digests first
  run corrupt <engine>       the same through `annlab run` (its checks of the
                             index against build.json's digests first)
  bundle <file>              one bit flipped in a dataset bundle member:
                             `annlab run` and `annlab dataset verify`
  kill -9 build              the runner killed during a build, then resumed
  kill -9 import             `dataset import --force` killed mid-way over a
                             bundle
  disk full import           the same import under a file-size limit
  interrupted run            SIGINT during a cell, then --resume
  same --out twice           two runs on one output directory at once
  shared index, no --wait    two runs needing the same unbuilt index
  shared index, --wait       the same with --wait

Each trial is counted as one of: clean error (a non-zero exit with a
message naming what is wrong), crash (a signal, a sanitizer report),
hang (past the timeout), silently wrong (exit 0 but a different answer, a
duplicated cell), data lost (an existing bundle or recorded cell gone or
changed), or unaffected (the flip fell where nothing reads, or the fault
was absorbed: the same answer, a run that resumed and finished).  The
table goes to stdout and WORK/robustness.md.  Needs a built ./annlab; runs
for a few minutes on 2 cores.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

OUTCOMES = ["clean error", "crash", "hang", "silently wrong", "data lost", "unaffected"]


class Tally:
    def __init__(self):
        self.rows = {}
        self.notes = []

    def add(self, category, outcome, note=None):
        row = self.rows.setdefault(category, {o: 0 for o in OUTCOMES})
        row[outcome] += 1
        if note and outcome in ("crash", "hang", "silently wrong", "data lost"):
            self.notes.append(f"{category}: {outcome}: {note}")

    def table(self):
        lines = ["| category | tried | " + " | ".join(OUTCOMES) + " |",
                 "|---|--:|" + "--:|" * len(OUTCOMES)]
        total = {o: 0 for o in OUTCOMES}
        for cat in self.rows:
            row = self.rows[cat]
            tried = sum(row.values())
            for o in OUTCOMES:
                total[o] += row[o]
            lines.append(f"| {cat} | {tried} | " + " | ".join(str(row[o]) for o in OUTCOMES) + " |")
        lines.append(f"| **all** | {sum(total.values())} | " +
                     " | ".join(f"**{total[o]}**" for o in OUTCOMES) + " |")
        return "\n".join(lines)


def sh(cmd, timeout=120, cwd=None, env=None, preexec=None):
    """Run cmd; (returncode, stdout, stderr, hung)."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout, preexec_fn=preexec)
        return p.returncode, p.stdout, p.stderr, False
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or "", True


def classify_exit(rc, err, hung):
    """Outcome of a command that should fail cleanly, or None if it succeeded."""
    if hung:
        return "hang"
    if rc is None or rc < 0 or rc >= 128 or "AddressSanitizer" in err or "runtime error:" in err:
        return "crash"
    if rc != 0:
        return "clean error" if err.strip() else "crash"
    return None


def flip(path, rng):
    size = os.path.getsize(path)
    if size == 0:
        return None
    off = rng.randrange(size)
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
    return off


def index_files(d):
    skip = ("build.json", ".verified.json", "lock.mdb", "LOCK")
    for root, _, files in os.walk(d):
        for name in sorted(files):
            if name in skip or name.startswith("LOG") or ".tmp." in name:
                continue
            yield os.path.relpath(os.path.join(root, name), d)


def cell_trial(annlab, spec, index, work):
    """`annlab cell` on index: (outcome or "unaffected", recall or None, note)."""
    spec2 = dict(spec, index_dir=index, latency_path=os.path.join(work, "corrupt", "lat.txt"))
    sp = os.path.join(work, "corrupt", "spec.json")
    with open(sp, "w") as f:
        json.dump(spec2, f)
    outp = os.path.join(work, "corrupt", "out.json")
    if os.path.exists(outp):
        os.unlink(outp)
    rc, _, err, hung = sh([annlab, "cell", sp, outp], timeout=60)
    o = classify_exit(rc, err, hung)
    if o:
        return o, None, err.strip()[-300:]
    with open(outp) as f:
        got = json.load(f)
    return "unaffected", got["recall"], f"recall {got['recall']}"


def engines_config(annlab, work):
    listed = subprocess.run([annlab, "engines"], capture_output=True, text=True).stdout
    names = [line.split()[0] for line in listed.splitlines() if line.strip()]
    known = {
        "flat": {},
        "diskann-sector": {"build": {"R": 16, "L_build": 32, "pq_bytes": 8},
                           "open": {"io": "pread"}, "search": {"L": 30}},
        "diskann-record": {"build": {"R": 16, "L_build": 32, "pq_bytes": 8, "kv": "lmdb"},
                           "open": {"kv": "lmdb"}, "search": {"L": 30}},
        "diskann-resident": {"build": {"R": 16, "L_build": 32, "pq_bytes": 8, "kv": "rocksdb"},
                             "open": {"kv": "rocksdb"}, "search": {"L": 30}},
        "hnsw-record": {"build": {"M": 8, "ef_construction": 32, "kv": "lmdb"},
                        "open": {"kv": "lmdb"}, "search": {"ef_search": 30}},
        "ivfpq-record": {"build": {"nlist": 16, "pq_bytes": 8, "kv": "lmdb"},
                         "open": {"kv": "lmdb"}, "search": {"nprobe": 8}},
        "ref-hnswlib": {"build": {"M": 8, "ef_construction": 32}, "search": {"ef_search": 30}},
        "ref-faiss-ivfpq": {"build": {"nlist": 16, "pq_bytes": 8}, "search": {"nprobe": 8}},
        "ref-faiss-hnsw": {"build": {"M": 8, "ef_construction": 32}, "search": {"ef_search": 30}},
    }
    engines = [dict(engine=n, **known[n]) for n in names if n in known]
    return {"name": "robustness", "dataset": {"path": os.path.join(work, "bundle")},
            "index_root": os.path.join(work, "index"), "k": 10, "engines": engines,
            "threads": [1], "modes": ["warm"], "queries": 40, "warmup_queries": 10,
            "qps_min_seconds": 0.01, "drop_caches": False, "timeout_s": 60}


def load_cells(out):
    cells = []
    path = os.path.join(out, "cells.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    cells.append(json.loads(line))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3, help="flips per index file (default 3)")
    ap.add_argument("--work", help="working directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    ap.add_argument("--annlab", default=os.path.abspath("annlab"))
    a = ap.parse_args()
    annlab = os.path.abspath(a.annlab)
    if not os.access(annlab, os.X_OK):
        sys.exit(f"robustness: {annlab} is not built (make)")
    work = a.work or tempfile.mkdtemp(prefix="annlab-robustness-")
    os.makedirs(work, exist_ok=True)
    t = Tally()
    rng = random.Random(14)

    # the data and every engine's index, and the answers to compare with
    rc, _, err, _ = sh([annlab, "dataset", "generate", "--n", "3000", "--dim", "32", "--metric",
                        "l2", "--queries", "40", "--warmup", "20", "--gt-k", "10", "--out",
                        os.path.join(work, "bundle"), "--force"], timeout=600)
    if rc:
        sys.exit(f"robustness: generate failed: {err}")
    cfg = engines_config(annlab, work)
    cfg_path = os.path.join(work, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    base_out = os.path.join(work, "out-baseline")
    rc, _, err, _ = sh([annlab, "run", cfg_path, "--out", base_out], timeout=1800, cwd=work)
    if rc:
        sys.exit(f"robustness: the baseline run failed: {err[-2000:]}")
    baseline = {c["engine"]: c for c in load_cells(base_out) if c["status"] == "ok"}
    print(f"baseline: {len(baseline)} engines: " +
          ", ".join(f"{e} recall {c['recall']:.3f}" for e, c in baseline.items()), flush=True)

    # 1. corruption, engines' own checks (annlab cell opens the index directly)
    for engine, cell in baseline.items():
        spec_path = os.path.join(base_out, "specs", cell["id"] + ".json")
        with open(spec_path) as f:
            spec = json.load(f)
        index = cell["index"]["dir"]
        if not os.path.isabs(index):
            index = os.path.join(work, index)
        for rel in index_files(index):
            for s in range(a.seeds):
                copy = os.path.join(work, "corrupt", engine)
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(index, copy)
                off = flip(os.path.join(copy, rel), random.Random(f"{engine}/{rel}/{s}"))
                if off is None:
                    continue
                bj = os.path.join(copy, "build.json")
                with open(bj) as f:
                    info = json.load(f)
                # the digests intact: checked by annlab cell before the engine
                o = cell_trial(annlab, spec, copy, work)
                t.add(f"cell corrupt {engine}", o[0] if o[0] != "unaffected" or o[1] == cell["recall"]
                      else "silently wrong", f"{rel} byte {off}: {o[2]}")
                # the engine's own checks only
                info.pop("files", None)
                with open(bj, "w") as f:
                    json.dump(info, f)
                spec2 = dict(spec, index_dir=copy,
                             latency_path=os.path.join(work, "corrupt", "lat.txt"))
                sp = os.path.join(work, "corrupt", "spec.json")
                with open(sp, "w") as f:
                    json.dump(spec2, f)
                outp = os.path.join(work, "corrupt", "out.json")
                if os.path.exists(outp):
                    os.unlink(outp)
                rc, _, err, hung = sh([annlab, "cell", sp, outp], timeout=60)
                cat = f"corrupt {engine} {rel.split('/')[-1]}"
                o = classify_exit(rc, err, hung)
                if o:
                    t.add(cat, o, f"byte {off}: {err.strip()[-300:]}")
                    continue
                with open(outp) as f:
                    got = json.load(f)
                same = got["recall"] == cell["recall"] and got["recall_plain"] == cell["recall_plain"]
                t.add(cat, "unaffected" if same else "silently wrong",
                      f"byte {off}: recall {got['recall']} vs {cell['recall']}")
        print(f"corrupt {engine}: done", flush=True)
    shutil.rmtree(os.path.join(work, "corrupt"), ignore_errors=True)

    # 2. corruption through annlab run: checked against build.json first
    for engine, cell in baseline.items():
        index = cell["index"]["dir"]
        if not os.path.isabs(index):
            index = os.path.join(work, index)
        files = list(index_files(index))
        for s in range(a.seeds):
            rel = random.Random(f"run/{engine}/{s}").choice(files)
            path = os.path.join(index, rel)
            with open(path, "rb") as f:
                orig = f.read()
            off = flip(path, random.Random(f"run/{engine}/{rel}/{s}"))
            out = os.path.join(work, f"out-run-{engine}-{s}")
            rc, _, err, hung = sh([annlab, "run", cfg_path, "--out", out, "--only", engine],
                                  timeout=600, cwd=work)
            with open(path, "wb") as f:
                f.write(orig)
            cat = f"run corrupt {engine}"
            o = classify_exit(rc, err, hung)
            if o:
                t.add(cat, o, f"{rel} byte {off}: run exited {rc}")
                continue
            c = [x for x in load_cells(out) if x["engine"] == engine]
            if not c:
                t.add(cat, "crash", f"{rel}: no cell recorded")
            elif c[0]["status"] != "ok":
                t.add(cat, "clean error" if c[0].get("reason") else "crash", c[0].get("reason"))
            elif c[0]["recall"] == cell["recall"]:
                t.add(cat, "unaffected")
            else:
                t.add(cat, "silently wrong", f"{rel} byte {off}: recall {c[0]['recall']}")
    print("run corrupt: done", flush=True)

    # 3. the bundle: annlab run and dataset verify
    bundle = os.path.join(work, "bundle")
    for member in ("base.fbin", "query.fbin", "gt.ibin", "warmup.fbin", "manifest.json"):
        for s in range(a.seeds):
            copy = os.path.join(work, "bundle-copy")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(bundle, copy)
            flip(os.path.join(copy, member), random.Random(f"bundle/{member}/{s}"))
            cfg2 = dict(cfg, dataset={"path": copy}, engines=[{"engine": "flat"}])
            p2 = os.path.join(work, "config-bundle.json")
            with open(p2, "w") as f:
                json.dump(cfg2, f)
            out = os.path.join(work, f"out-bundle-{member}-{s}")
            rc, _, err, hung = sh([annlab, "run", p2, "--out", out], timeout=300, cwd=work)
            o = classify_exit(rc, err, hung)
            if o:
                t.add(f"bundle {member} (run)", o, err.strip()[-300:])
            else:
                cells = load_cells(out)
                same = cells and cells[0]["status"] == "ok" and \
                    cells[0]["recall"] == baseline.get("flat", {}).get("recall")
                t.add(f"bundle {member} (run)", "unaffected" if same else "silently wrong",
                      "run accepted a changed bundle")
            rc, _, err, hung = sh([annlab, "dataset", "verify", copy], timeout=120)
            o = classify_exit(rc, err, hung)
            t.add(f"bundle {member} (verify)", o or "silently wrong",
                  None if o else "verify passed a changed bundle")
    shutil.rmtree(os.path.join(work, "bundle-copy"), ignore_errors=True)
    print("bundle: done", flush=True)

    # 4. process faults
    for s in range(a.seeds):
        cfg3 = dict(cfg, index_root=os.path.join(work, f"index-kill-{s}"),
                    engines=[e for e in cfg["engines"] if e["engine"] == "diskann-sector"])
        p3 = os.path.join(work, f"config-kill-{s}.json")
        with open(p3, "w") as f:
            json.dump(cfg3, f)
        out = os.path.join(work, f"out-kill-{s}")
        runner = subprocess.Popen([annlab, "run", p3, "--out", out], cwd=work,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        engine_dir = os.path.join(cfg3["index_root"], "diskann-sector")
        deadline = time.time() + 60
        while time.time() < deadline and runner.poll() is None:
            if os.path.isdir(engine_dir) and any(".tmp." in n for n in os.listdir(engine_dir)):
                break
            time.sleep(0.01)
        time.sleep(random.Random(s).random() * 0.3)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        time.sleep(0.5)
        rc, _, err, hung = sh([annlab, "run", p3, "--out", out, "--resume", "--wait"],
                              timeout=900, cwd=work)
        o = classify_exit(rc, err, hung)
        left = [n for n in os.listdir(engine_dir) if ".tmp." in n] if os.path.isdir(engine_dir) else []
        cells = load_cells(out)
        if o:
            t.add("kill -9 build", o, err.strip()[-300:])
        elif left:
            t.add("kill -9 build", "data lost", f"temporaries left: {left}")
        elif len(cells) != 1 or cells[0]["status"] != "ok":
            t.add("kill -9 build", "silently wrong", f"cells after resume: {cells}")
        else:
            t.add("kill -9 build", "unaffected")

    big = os.path.join(work, "big.fbin")
    rc, _, err, _ = sh([annlab, "dataset", "generate", "--n", "150000", "--dim", "32", "--metric",
                        "l2", "--queries", "20", "--warmup", "10", "--gt-k", "10", "--out",
                        os.path.join(work, "big"), "--force"], timeout=900)
    if rc:
        sys.exit(f"robustness: generate (big) failed: {err}")
    shutil.copyfile(os.path.join(work, "big", "base.fbin"), big)
    q = os.path.join(work, "big", "query.fbin")
    target = os.path.join(work, "bundle-target")
    for s in range(a.seeds):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(bundle, target)
        before = open(os.path.join(target, "manifest.json"), "rb").read()
        imp = subprocess.Popen([annlab, "dataset", "import", big, q, "--out", target, "--metric", "l2",
                                "--force"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.05 + random.Random(s).random() * 1.0)
        imp.send_signal(signal.SIGKILL)
        imp.wait()
        rc, _, err, hung = sh([annlab, "dataset", "verify", target], timeout=120)
        after = open(os.path.join(target, "manifest.json"), "rb").read() \
            if os.path.exists(os.path.join(target, "manifest.json")) else b""
        if rc == 0 and (after == before or json.loads(after).get("n") == 150000):
            t.add("kill -9 import", "unaffected")
        else:
            t.add("kill -9 import", "data lost", f"verify exited {rc}: {err.strip()[-200:]}")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(bundle, target)
        rc, _, err, hung = sh(["sh", "-c", f"trap '' XFSZ; ulimit -f {256 * (s + 1)}; exec "
                               f"'{annlab}' dataset import '{big}' '{q}' --out '{target}' --metric l2 --force"],
                              timeout=300)
        o = classify_exit(rc, err, hung)
        rc2, _, _, _ = sh([annlab, "dataset", "verify", target], timeout=120)
        if rc2 != 0 or open(os.path.join(target, "manifest.json"), "rb").read() != before:
            t.add("disk full import", "data lost", f"import exited {rc}")
        else:
            t.add("disk full import", o or "unaffected")

    for s in range(a.seeds):
        cfg4 = dict(cfg, engines=[{"engine": "flat"}], modes=["cold", "warm"], threads=[1, 2])
        p4 = os.path.join(work, f"config-int-{s}.json")
        with open(p4, "w") as f:
            json.dump(cfg4, f)
        out = os.path.join(work, f"out-int-{s}")
        runner = subprocess.Popen([annlab, "run", p4, "--out", out], cwd=work,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5 + random.Random(s).random())
        runner.send_signal(signal.SIGINT)
        rc1 = runner.wait()
        n1 = len(load_cells(out))
        rc, _, err, hung = sh([annlab, "run", p4, "--out", out, "--resume"], timeout=600, cwd=work)
        o = classify_exit(rc, err, hung)
        cells = load_cells(out)
        ids = [c["id"] for c in cells]
        if o:
            t.add("interrupted run", o, err.strip()[-200:])
        elif len(set(ids)) != 4 or len(ids) != 4 or n1 > 4:
            t.add("interrupted run", "silently wrong", f"exit {rc1}, then {len(ids)} records")
        else:
            t.add("interrupted run", "unaffected")
    print("process faults: done", flush=True)

    # 5. concurrent runs
    for s in range(a.seeds):
        out = os.path.join(work, f"out-twice-{s}")
        cfg5 = dict(cfg, engines=[{"engine": "flat"}], modes=["cold", "warm"])
        p5 = os.path.join(work, "config-twice.json")
        with open(p5, "w") as f:
            json.dump(cfg5, f)
        procs = [subprocess.Popen([annlab, "run", p5, "--out", out], cwd=work,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        errs = [p.communicate(timeout=600)[1] for p in procs]  # never blocks on a full pipe
        res = [(p.returncode, e) for p, e in zip(procs, errs)]
        ids = [c["id"] for c in load_cells(out)]
        codes = sorted(r[0] for r in res)
        if len(ids) != len(set(ids)):
            t.add("same --out twice", "silently wrong", f"{len(ids)} records, {len(set(ids))} cells")
        elif codes == [0, 2] and any("another run is writing" in r[1] or
                                     "already holds this run" in r[1] for r in res):
            t.add("same --out twice", "clean error")
        elif codes == [0, 0] and len(ids) == 2:
            t.add("same --out twice", "unaffected")
        else:
            t.add("same --out twice", "crash", f"exits {codes}")
        for wait in (False, True):
            root = os.path.join(work, f"index-shared-{s}-{int(wait)}")
            cfg6 = dict(cfg, index_root=root,
                        engines=[e for e in cfg["engines"] if e["engine"] == "diskann-sector"])
            p6 = os.path.join(work, "config-shared.json")
            with open(p6, "w") as f:
                json.dump(cfg6, f)
            cmds = [[annlab, "run", p6, "--out", os.path.join(work, f"out-shared-{s}-{wait}-{i}")]
                    + (["--wait"] if wait else []) for i in range(2)]
            procs = [subprocess.Popen(c, cwd=work, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True) for c in cmds]
            errs = [p.communicate(timeout=900)[1] for p in procs]  # never blocks on a full pipe
            res = [(p.returncode, e) for p, e in zip(procs, errs)]
            cells = [load_cells(os.path.join(work, f"out-shared-{s}-{wait}-{i}")) for i in range(2)]
            bad = [c for cs in cells for c in cs if c["status"] != "ok"]
            cat = "shared index, --wait" if wait else "shared index, no --wait"
            codes = sorted(r[0] for r in res)
            if bad:
                t.add(cat, "crash" if "rename" in str(bad) else "clean error",
                      "; ".join(str(c.get("reason")) for c in bad))
            elif codes == [0, 0]:
                t.add(cat, "unaffected")
            elif codes == [0, 2] and any("being built by another run" in r[1] for r in res):
                t.add(cat, "clean error")
            else:
                t.add(cat, "crash", f"exits {codes}")
    print("concurrency: done", flush=True)

    report = t.table()
    if t.notes:
        report += "\n\nNotes:\n\n" + "\n".join(f"- {n}" for n in t.notes[:100])
    with open(os.path.join(work, "robustness.md"), "w") as f:
        f.write(report + "\n")
    print(report)
    print(f"\n(work directory {work})")
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
