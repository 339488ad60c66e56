#!/usr/bin/python3
"""The companion page in a real browser: CTest test `browser_test` of the wasm build (label
`browser`). Debian's headless Chromium, driven by chromedriver through python3-selenium (no
browser download), loads build-wasm/web/ from a loopback server started here, and the checks
read the page's DOM as a student would see it:

  - the workbench's lecture preset shows 10 and 19.820138, and column mode says the row sums
    are no longer 1 and Z leaves the range of V;
  - femto trains 300 steps in the page's Web Worker and its val loss falls below the unigram
    baseline the page draws, while the page keeps answering input;
  - bad inputs (a ragged Q, a non-UTF-8 file, a truncated checkpoint, a prompt longer than the
    context) show a clear message, and the page keeps working afterwards;
  - gradient checks of softmax pass;
  - the page asked the server only for its own files, and the browser fetched nothing else;
  - a screenshot of each part is saved in the output directory and is not blank.

  /usr/bin/python3 tests/web/browser_test.py build-wasm/web OUTPUT_DIR
"""
import http.server
import os
import re
import sys
import tempfile
import threading
import time
import zlib

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

WEB_DIR = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build-wasm/web")
OUT_DIR = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "browser-test-output")
OWN_FILES = set(os.listdir(WEB_DIR))
requests = []  # every path the browser asked the server for
failures = []
passed = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    (passed if condition else failures).append(what)


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=WEB_DIR, **kwargs)

    def log_message(self, fmt, *args):
        requests.append(self.path)


def png_has_content(png):
    """True when the PNG's pixels are not one flat colour: its decompressed scanlines hold a
    variety of byte values (a blank page filters to almost all zeros)."""
    pos, data = 8, b""
    while pos < len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        kind = png[pos + 4:pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(data)
    distinct = len(set(raw))
    nonzero = sum(1 for b in raw[::7] if b not in (0, 255)) / max(1, len(raw[::7]))
    return distinct > 16 and nonzero > 0.002


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d/" % server.server_address[1]

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,1000",
                "--disable-background-networking", "--disable-component-update",
                "--disable-default-apps", "--disable-sync", "--no-first-run",
                "--disable-features=Translate,OptimizationHints,MediaRouter"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_script_timeout(120)
    wait = lambda seconds=60: WebDriverWait(driver, seconds)
    text = lambda element_id: driver.find_element(By.ID, element_id).text
    try:
        started = time.time()
        driver.get(base + "index.html")
        driver.execute_async_script("const done = arguments[0]; window.page.ready.then(() => done(true));")
        check(time.time() - started < 10, "the page and its engine load (%.1f s)" % (time.time() - started))

        # Part 1: the lecture's preset, then column mode.
        z = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")]
        check(z == ["10", "19.820138"], "the workbench preset shows Z = %s (10 and 19.820138)" % z)
        sums = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-A td.sum")]
        check(sums == ["1", "1"], "row sums of A are 1: %s" % sums)
        driver.find_element(By.ID, "part1").screenshot(os.path.join(OUT_DIR, "part1.png"))
        Select(driver.find_element(By.ID, "wb-softmax")).select_by_value("column")
        warning = text("wb-warning")
        check("no longer sum to 1" in warning and "leaves the range of V" in warning,
              "column mode flags the row sums and Z: %r" % warning)
        Select(driver.find_element(By.ID, "wb-softmax")).select_by_value("row")

        # A ragged Q: a message, then the page works again.
        q = driver.find_element(By.ID, "wb-Q")
        q.clear()
        q.send_keys("1, 2; 3")
        error = text("wb-error")
        check("Q" in error and len(error) > 20, "a ragged Q is refused: %r" % error)
        q.clear()
        q.send_keys("1; 2")
        z = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")]
        check(text("wb-error") == "" and z == ["10", "19.820138"], "after a fix the workbench works again")

        # Part 5: gradient checks.
        Select(driver.find_element(By.ID, "gc-op")).select_by_visible_text("softmax")
        driver.find_element(By.ID, "gc-go").click()
        table = text("gc-table")
        check("PASS" in table and "FAIL" not in table, "softmax's gradient check passes in the page")
        driver.find_element(By.ID, "part5").screenshot(os.path.join(OUT_DIR, "part5.png"))

        # Part 3: a non-UTF-8 file is refused; then femto trains on the shipped text.
        bad = os.path.join(tempfile.mkdtemp(), "latin1.txt")
        with open(bad, "wb") as f:
            f.write(b"In the beginning \xe9t\xe9\n" * 20)
        driver.find_element(By.ID, "tr-file").send_keys(bad)
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: text("tr-error") != "")
        check("UTF-8" in text("tr-error"), "a non-UTF-8 file is refused: %r" % text("tr-error"))
        driver.execute_script("document.getElementById('tr-file').value = '';")
        driver.find_element(By.ID, "tr-steps").clear()
        driver.find_element(By.ID, "tr-steps").send_keys("300")
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: d.find_element(By.ID, "tr-start").is_enabled())
        check(text("tr-error") == "", "femto builds on the shipped text after the refusal")
        unigram = float(re.search(r"unigram ([0-9.]+)", text("tr-info")).group(1))
        driver.find_element(By.ID, "tr-start").click()
        # The page answers input while the worker trains.
        Select(driver.find_element(By.ID, "wb-preset")).select_by_value("t3")
        answered = time.time()
        rows = len(driver.find_elements(By.CSS_SELECTOR, "#wb-Z tr"))
        check(rows == 3 and time.time() - answered < 2, "the workbench answers while training runs")
        Select(driver.find_element(By.ID, "wb-preset")).select_by_value("lecture")
        wait(300).until(lambda d: "done" in text("tr-progress"))
        progress = text("tr-progress")
        val = float(re.search(r"val loss ([0-9.]+)", progress).group(1))
        check("step 300 / 300" in progress, "femto trained 300 steps: %r" % progress)
        check(val < unigram, "femto's val loss %.4f is below the unigram baseline %.4f" % (val, unigram))
        driver.find_element(By.ID, "part3").screenshot(os.path.join(OUT_DIR, "part3.png"))

        # Part 4 and a prompt longer than the context (block_size 8).
        prompt = driver.find_element(By.ID, "li-prompt")
        prompt.clear()
        prompt.send_keys("In the beginning")
        driver.find_element(By.ID, "li-go").click()
        wait().until(lambda d: text("li-error") != "")
        check("longer than this model's context" in text("li-error"),
              "a prompt longer than the context is refused: %r" % text("li-error"))
        prompt.clear()
        prompt.send_keys("In the")
        driver.find_element(By.ID, "li-go").click()
        wait().until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#li-maps table.heat")) == 1)
        check(text("li-error") == "", "after a short prompt the attention map is drawn")
        driver.find_element(By.ID, "part4").screenshot(os.path.join(OUT_DIR, "part4.png"))

        # A truncated checkpoint is refused; the trained model still samples.
        ckpt = driver.execute_async_script(
            "const done = arguments[0]; window.page.workerCall('save').then((b) => done(Array.from(b)));")
        check(len(ckpt) > 1000, "the page saves a checkpoint (%d bytes)" % len(ckpt))
        truncated = os.path.join(tempfile.mkdtemp(), "truncated.safetensors")
        with open(truncated, "wb") as f:
            f.write(bytes(ckpt[: len(ckpt) // 2]))
        driver.find_element(By.ID, "tr-load").send_keys(truncated)
        wait().until(lambda d: text("tr-error") != "")
        check(len(text("tr-error")) > 20, "a truncated checkpoint is refused: %r" % text("tr-error"))
        driver.find_element(By.ID, "sm-go").click()
        wait().until(lambda d: len(text("sm-text")) > 50)
        check(text("sm-text").startswith("And God said"), "sampling works after the refusal")

        # Nothing but the page's own files was fetched.
        entries = driver.execute_script(
            "return performance.getEntriesByType('resource').map((e) => e.name)"
            ".concat(performance.getEntriesByType('navigation').map((e) => e.name));")
        outside = [e for e in entries if not e.startswith(base)]
        check(outside == [], "the browser fetched only from the page's server: %s" % outside)
        paths = sorted(set(r.split("?")[0].lstrip("/") for r in requests))
        check(all(p in OWN_FILES for p in paths), "the server was asked only for its own files: %s" % paths)
    finally:
        driver.quit()
        server.shutdown()

    for part in ("part1", "part3", "part4", "part5"):
        with open(os.path.join(OUT_DIR, part + ".png"), "rb") as f:
            check(png_has_content(f.read()), "the screenshot of %s is not blank" % part)
    print("%d passed, %d failed" % (len(passed), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
