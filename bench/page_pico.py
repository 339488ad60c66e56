#!/usr/bin/python3
"""The homework's pico run in the companion page against the native CLI on one thread,
interleaved (native, page, native, page, ...), and the page's first load.

    /usr/bin/python3 bench/page_pico.py build-wasm/page build/cli/attograd --rounds 2 [--text kjv]

Both sides train pico with the settings of examples/train_pico.sh (20,000 steps, batch 64, lr
1e-2 to 1e-3, warmup 200, an evaluation of 50 batches per split every 100 steps up to 2,000,
then every 2,000) on the same
text, the page's shipped Genesis (the time per step does not depend on the text, and this way
both evaluate the same batches' worth of the same kind of data), or with --text kjv its whole
Bible, the corpus the homework trains on (4 MB, whose reading and tokenizing the native side's
wall time includes and the page's timing, from the first step, does not):
  native  `attograd train --threads 1` (the engine's pool with the calling thread only), the
          wall time of the whole command, checkpoint writes and logs included;
  page    headless Chromium (Debian's chromium and chromedriver, python3-selenium) on a loopback
          server: the page's Web Worker builds the model and trains it in calls of up to 10 steps
          (as many as take about 10 ms) as the Train button does, from the first step to the end
          of the last evaluation.
The first load is measured in a fresh browser each round: from navigation to the engine being
ready (window.page.ready), and the bytes the server sent until then. Medians over the rounds.
Nothing here is a test: timings on a shared machine are noisy, so they are measured, not asserted
(docs/performance.md records them with the machine and the date).
"""
import argparse
import http.server
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

sys.dont_write_bytecode = True  # no __pycache__ folder beside this script from the import below
from compare import machine_line  # noqa: E402

SETTINGS = dict(steps=20000, batch_size=64, lr=1e-2, min_lr=1e-3, warmup=200, eval_interval=2000,
                eval_early=100, eval_iters=50)


def serve(web_dir, sent):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=web_dir, **kwargs)

        def log_message(self, fmt, *args):
            path = self.path.split("?")[0].lstrip("/")
            full = os.path.join(web_dir, path)
            sent.append(os.path.getsize(full) if os.path.isfile(full) else 0)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1000",
                "--disable-background-networking", "--disable-component-update", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(3600)
    return driver


def page_round(web_dir, text_name):
    """(load seconds, load bytes, training seconds, final val loss) in a fresh browser."""
    sent = []
    server, base = serve(web_dir, sent)
    driver = browser()
    try:
        start = time.time()
        driver.get(base + "index.html")
        driver.execute_async_script(
            "const done = arguments[0]; window.page.ready.then(() => done(true));")
        load = time.time() - start
        load_bytes = sum(sent)
        s = dict(SETTINGS, text=text_name)
        result = driver.execute_async_script("""
            const [s, done] = arguments;
            const page = window.page;
            fetch(s.text).then((r) => r.text()).then(async (text) => {
              await page.workerCall('newModel', {preset: 'pico', text, batch_size: s.batch_size,
                learning_rate: s.lr, min_lr: s.min_lr, warmup_steps: s.warmup,
                max_steps: s.steps, eval_interval: s.eval_interval, eval_early: s.eval_early,
                eval_iters: s.eval_iters});
              const start = performance.now();
              page.onDone = (p) => done({seconds: (performance.now() - start) / 1000,
                                         val_loss: p.eval.val_loss, step: p.step});
              await page.workerCall('start', {target: s.steps, chunk: 10, tokensPerStep: 1});
            });""", s)
        return load, load_bytes, result["seconds"], result["val_loss"]
    finally:
        driver.quit()
        server.shutdown()


def native_round(cli, text):
    s = SETTINGS
    with tempfile.TemporaryDirectory() as out:
        start = time.time()
        run = subprocess.run(
            [cli, "train", "--preset", "pico", "--corpus", text, "--out", out + "/run",
             "--steps", str(s["steps"]), "--batch-size", str(s["batch_size"]), "--lr", str(s["lr"]),
             "--min-lr", str(s["min_lr"]), "--warmup", str(s["warmup"]),
             "--eval-interval", str(s["eval_interval"]), "--eval-early", str(s["eval_early"]),
             "--eval-iters", str(s["eval_iters"]),
             "--log-interval", "5000", "--threads", "1"],
            capture_output=True, text=True, check=True)
        seconds = time.time() - start
    val = [line for line in run.stdout.splitlines() if "val" in line]
    return seconds, val[-1] if val else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("web_dir")
    parser.add_argument("cli")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--text", choices=["genesis", "kjv"], default="genesis",
                        help="the page's shipped text both sides train on (default genesis)")
    args = parser.parse_args()
    web_dir = os.path.abspath(args.web_dir)
    text = os.path.join(web_dir, args.text + ".txt")
    print("%s, %s, %d CPUs, load %s" % (datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                                       platform.processor() or platform.machine(), os.cpu_count(),
                                       " ".join("%.2f" % x for x in os.getloadavg())), flush=True)
    # the machine's kind (bench/machine.h), from the benchmark build beside the CLI's
    train_bench = Path(args.cli).resolve().parent.parent / "bench" / "train_bench"
    if train_bench.exists():
        print(machine_line(train_bench), flush=True)
    native, page, loads, sizes = [], [], [], []
    for r in range(args.rounds):
        seconds, last = native_round(args.cli, text)
        native.append(seconds)
        print("round %d native: %.1f s  (%s)" % (r + 1, seconds, last.strip()), flush=True)
        load, size, seconds, val = page_round(web_dir, args.text + ".txt")
        page.append(seconds)
        loads.append(load)
        sizes.append(size)
        print("round %d page:   %.1f s, val loss %.4f; first load %.2f s, %.2f MB" %
              (r + 1, seconds, val, load, size / 1e6), flush=True)
    n, p = statistics.median(native), statistics.median(page)
    print("median: native 1 thread %.1f s, page %.1f s: page / native = %.2fx; first load %.2f s, "
          "%.2f MB" % (n, p, p / n, statistics.median(loads), statistics.median(sizes) / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
