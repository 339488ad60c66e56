#!/usr/bin/python3
"""The companion page in a real browser: CTest test `browser_test` of the wasm build (label
`browser`). Debian's headless Chromium, driven by chromedriver through python3-selenium (no
browser download), loads build-wasm/page/ from a loopback server started here, and the checks
read the page's DOM as a student would see it:

  - the first load (everything fetched before the engine is ready) is under 5 MB; its time is
    printed (docs/performance.md records it);
  - the workbench's lecture preset shows 10 and 19.820138 with rows of A summing to 1, column
    mode says the row sums are no longer 1 and Z leaves the range of V, predict-then-check
    asks for a guess (refusing "19.8abc") and reveals the number only after one, a ragged Q shows
    a message and the page recovers, rows typed on separate lines are rows, a trailing ';' or ','
    ends a row, and matrices beyond 64 rows or columns are refused before the engine runs;
  - the workbench's heat view: each cell of S, the masked scores and A coloured by its value's sign
    with strength |x| / the matrix's largest |x| (the largest weight the most saturated), the
    mask's −∞ cells hatched; hover titles of 6 significant digits; at T = 64 colours only, each
    table narrower than the page; at a 360-px-wide window the Q, K and V boxes fit and the page
    does not scroll sideways; the preset menu says "custom" for an edited Q and the preset's name
    when the boxes hold its matrices again (however written); the engine's averaging preset gives
    Z the running means of V; two heads give Z = concat of each head's attention on its half of
    the columns (computed here), one head the usual output, the two-heads preset each head's
    pattern, and a d_k of 1 refuses two heads with the reason; Enter in the guess box checks it;
  - the JS API refuses a temperature of Infinity, NaN or -Infinity, naming it;
  - positions: the sinusoidal table is drawn (a T out of range or an odd n_embd clears it and
    says why), the RoPE score depends only on m - n and an overflowing one is refused
    (never shown as -inf), the RoPE dials mark m·θ_i and n·θ_i (θ_i = 10000^(-2i/d), the
    engine's) and follow m and n, and with positions off "dog bites man"
    reordered gives the same mean (with them, it differs);
  - gradient checks of softmax pass;
  - a file with a byte order mark and CRLF line ends gives its LF text's model line (as
    attograd train reads a file), and the bigram's and average's lines list only their settings;
  - a non-UTF-8 file is refused with a message naming it, an empty file in the page's words, and
    so is a Build whose shipped text cannot be fetched (no server, a 404); a file input is emptied
    once read, so the same file chosen again is read again; model sizes, steps and batch beyond
    the page's maxima are refused naming the maximum, and an empty or zero learning rate in the
    page's words; pico trains 300 steps in the page's Web
    Worker and its val loss falls below the unigram baseline the page draws, while the page's
    main thread keeps answering (its event loop is never blocked for long, and the workbench
    answers input, while the step count rises); Train at the end of the run says to raise Steps (a sample
    then clears that message), and raised, it trains on; the chart's perplexity view draws e^loss of the run's points (the val points the
    engine's val_ppl) and the baselines as perplexities, and its legend and labels fit inside it;
  - sampling, one token a request, shows the text token by token with the bars following it;
    afterwards a click or hover on the k-th generated token shows the bars of step k, equal to
    what one engine request with the same seed reports for step k, the k-th token marked, the
    bars and the rest summing to 1; a prompt longer than the context is refused, and clears the
    last prompt's maps, legend and summary; a character the text lacks is named in the page's
    words; a space's header shows '·';
  - a checkpoint written by the native CLI (FIXTURE_DIR, tests/web/native_fixture.sh) loads, and
    the attention map of every layer and head has rows summing to 1, zeros above the diagonal,
    and the weights of `attograd attention`'s CSV within 1e-5; loaded while the pico trains, it
    ends the run, clears the progress line and disables Train and Pause; a truncated checkpoint
    is refused and the page keeps working; Build during training clears the progress line and
    disables Pause, and the new model trains from step 0;
  - "attention is not explanation" on the pico trained in the page and on the native checkpoint:
    every map marks, in each query row 1 .. T-2, one most-attended key (an outline) and one
    key whose dropped term changes the loss most (a dot), the keys and the numbers in their titles
    those of the engine's forward request (and, for the checkpoint, of `attograd attention
    --attribution`'s attribution.csv), with a legend, and the summary says "X of Y" with the
    engine's counts; the page names the section of docs/03-attention.md and links to the chapter
    as plain text, served with the page;
  - homework 11: the preset is examples/train_pico.sh's command (read here with shlex): Build
    with it trains pico on the King James Bible (kjv.txt, as many characters as the CLI's kjv)
    with each of the script's 8 training options, as the engine reports them; the val curve
    starts at step 0 with the early evaluations every 100 steps; the chart is redrawn at most 4
    times a second while the worker reports more often, its smoothed curve is the running mean
    of the train points (computed here, and on a known series with non-finite values), its x
    ticks are round steps, and at devicePixelRatio 2 it has twice the pixels at the same size; a
    batch changed during the run is said at once (and the message goes when it is set back),
    Steps changed during the run is applied and the run ends there;
  - a run at learning rate 50 diverges: the page says so, the chart keeps the steps before the
    refusal, and its tick labels stay short numbers inside the canvas in the loss view (up to
    1e16) and the perplexity view (infinite values left out); femto's plateau at the unigram is
    explained with its numbers; on a phone's width (390 px) part 3 and its chart fit;
  - the page asked the server only for its own files, and the browser fetched nothing else;
  - opened as file://, the page says to serve it (bash scripts/playground.sh);
  - a screenshot of each part is saved in OUTPUT_DIR and is not blank.

  /usr/bin/python3 tests/web/browser_test.py build-wasm/page OUTPUT_DIR FIXTURE_DIR
"""
import math
import os
import re
import shlex
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zlib

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from browser_tools import check, failures, passed, serve, start_browser

WEB_DIR = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build-wasm/page")
OUT_DIR = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "browser-test-output")
FIXTURE_DIR = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
OWN_FILES = set(os.listdir(WEB_DIR))
requests = []  # every path the browser asked the server for, in order


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


def read_csv(path, T):
    """`attograd attention`'s CSV: a header of key tokens, then per query its token and its T
    weights (the last T fields; a token holding a comma is quoted)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().strip().split("\n")[1:]
    return [[float(x) for x in line.split(",")[-T:]] for line in lines]


def check_attribution(driver, what, prompt, expect_rows, cli_rows=None):
    """Part 4's marks and summary for `prompt` (already shown) against the engine's own answer to
    the same forward request (and the CLI's rows when given)."""
    api = driver.execute_async_script(
        "const done = arguments[1];"
        "window.page.workerCall('forward', {prompt: arguments[0]}).then((r) => done(r.attribution));",
        prompt)
    rows = api["rows"]
    T = len(prompt)
    drawn = driver.execute_script("""
        return [...document.querySelectorAll('#li-maps .map')].map((m) => ({
          title: m.querySelector('h4').textContent,
          rows: [...m.querySelectorAll('table.heat tr')].slice(1).map((tr) =>
              [...tr.querySelectorAll('td')].map((td) => ({
                most: td.dataset.most === '1', change: td.dataset.change,
                outline: getComputedStyle(td).boxShadow !== 'none',
                dot: td.querySelector('.dot') !== null, title: td.title,
                label: td.getAttribute('aria-label')})))}));""")
    by_key = {(r["layer"], r["head"], r["query"]): r for r in rows}
    problems = []
    for m in drawn:
        l, h = map(int, re.match(r"layer (\d+), head (\d+)", m["title"]).groups())
        for q, cells in enumerate(m["rows"]):
            most = [k for k, c in enumerate(cells) if c["most"]]
            change = [k for k, c in enumerate(cells) if c["change"] is not None]
            a = by_key.get((l, h, q))
            if a is None:
                if most or change:
                    problems.append("layer %d head %d query %d is marked" % (l, h, q))
                continue
            if most != [a["most_attended"]] or change != [a["largest_change"]]:
                problems.append("layer %d head %d query %d: marks %s %s, engine %d %d" %
                                (l, h, q, most, change, a["most_attended"], a["largest_change"]))
                continue
            cm, cc = cells[most[0]], cells[change[0]]
            if not (cm["outline"] and cc["dot"] and cm["label"] and cc["label"]):
                problems.append("layer %d head %d query %d: outline/dot/label missing" % (l, h, q))
            if ("weight %.4f" % a["weight"]) not in cm["title"]:
                problems.append("weight %.4f not in %r" % (a["weight"], cm["title"]))
            nats = ("+" if a["change"] >= 0 else "\u2212") + "%.4f nats" % abs(a["change"])
            if nats not in cc["title"] or float(cc["change"]) != a["change"]:
                problems.append("change %s not in %r" % (nats, cc["title"]))
    check(len(rows) == expect_rows and len(by_key) == len(rows) and api["reason"] is None,
          "%s: the engine gives %d attribution rows (%d expected)" % (what, len(rows), expect_rows))
    check(problems == [], "%s: every map marks the engine's keys, with their weight and change in "
          "the titles (%d rows; %s)" % (what, len(rows), problems[:3]))
    summary = driver.find_element(By.ID, "li-summary").text
    differ = sum(1 for r in rows if r["differ"])
    want = ("The most-attended key is not the one whose dropped term changes the loss most for "
            "%d of %d (layer, head, query)." % (differ, len(rows)))
    check(summary == want and api["differ"] == differ, "%s: the summary %r" % (what, summary))
    check(driver.find_element(By.ID, "li-legend").is_displayed(), "%s: the legend is shown" % what)
    if cli_rows is not None:
        ours = [(r["layer"], r["head"], r["query"], r["most_attended"], r["largest_change"]) for r in rows]
        theirs = [tuple(int(x) for x in (c[0], c[1], c[2], c[3], c[5])) for c in cli_rows]
        worst = max(abs(r["change"] - float(c[6])) / abs(float(c[6])) for r, c in zip(rows, cli_rows))
        check(ours == theirs and worst <= 1e-5,
              "%s: the rows are attograd attention --attribution's (changes within %.1e relative)"
              % (what, worst))
    return differ, len(rows)


def inside(inner, outer, slack=0.5):
    """Whether the box `inner` ({left, top, right, bottom}) lies within `outer`."""
    return (inner["left"] >= outer["left"] - slack and inner["top"] >= outer["top"] - slack and
            inner["right"] <= outer["right"] + slack and inner["bottom"] <= outer["bottom"] + slack)


def check_chart(driver):
    """Part 3's chart after a run: the perplexity view draws e^loss of the loss view's points
    (the val points the engine's own perplexities, the last one what evaluate answers now), the
    baselines as perplexities, the val curve where its points are; the legend lies inside the
    chart's figure and every label drawn on the canvas inside the canvas, in each view."""
    metric = Select(driver.find_element(By.ID, "tr-metric"))
    views = {}
    for name in ("loss", "perplexity"):
        metric.select_by_value(name)
        views[name] = driver.execute_script("return window.page.chart();")
    loss, ppl = views["loss"], views["perplexity"]
    rel = lambda a, b: abs(a - b) / abs(b)
    train_ok = (len(ppl["train"]) == len(loss["train"]) > 0 and
                all(p[0] == l[0] and rel(p[1], math.exp(l[1])) < 1e-12
                    for p, l in zip(ppl["train"], loss["train"])))
    check(ppl["metric"] == "perplexity" and loss["metric"] == "loss" and train_ok,
          "the perplexity view draws e^loss of each of the %d train points" % len(loss["train"]))
    val_ok = (len(ppl["val"]) == len(loss["val"]) > 0 and
              all(p[0] == l[0] and rel(p[1], math.exp(l[1])) < 1e-9
                  for p, l in zip(ppl["val"], loss["val"])))
    now = driver.execute_async_script(
        "const done = arguments[0]; window.page.workerCall('evaluate').then(done);")
    check(val_ok and ppl["val"][-1] == [now["step"], now["val_ppl"]],
          "the val perplexities are e^(val loss), the last the engine's val_ppl at step %d: %.4f"
          % (now["step"], now["val_ppl"]))
    check(rel(ppl["unigram"], math.exp(loss["unigram"])) < 1e-12 and
          rel(ppl["bigram"], math.exp(loss["bigram"])) < 1e-12,
          "the baselines as perplexities: unigram %.3f = e^%.4f, bigram %.3f = e^%.4f" %
          (ppl["unigram"], loss["unigram"], ppl["bigram"], loss["bigram"]))
    # The last val point on the canvas: a pixel of the val colour (#c02040) beside it.
    x, y = ppl["val_pixels"][-1]
    near = driver.execute_script("""
        const [x, y] = arguments, g = document.getElementById('tr-chart').getContext('2d');
        const d = g.getImageData(Math.round(x) - 3, Math.round(y) - 3, 7, 7).data;
        let best = 1e9;
        for (let i = 0; i < d.length; i += 4)
          best = Math.min(best, Math.abs(d[i] - 0xc0) + Math.abs(d[i + 1] - 0x20) + Math.abs(d[i + 2] - 0x40));
        return best;""", x, y)
    check(near < 60, "the val perplexity curve passes its last point (%.0f, %.0f): colour distance %d"
          % (x, y, near))
    legend_text = driver.find_element(By.ID, "tr-legend").text
    check("val perplexity" in legend_text and "unigram baseline" in legend_text,
          "the legend follows the view: %r" % legend_text)
    for log in (False, True):
        if driver.find_element(By.ID, "tr-log").is_selected() != log:
            driver.find_element(By.ID, "tr-log").click()
        for name in ("loss", "perplexity"):
            metric.select_by_value(name)
            boxes = driver.execute_script("""
                const box = (e) => e.getBoundingClientRect().toJSON();
                return {figure: box(document.getElementById('tr-figure')),
                        canvas: box(document.getElementById('tr-chart')),
                        legend: box(document.getElementById('tr-legend')),
                        keys: [...document.querySelectorAll('#tr-legend .key')].map(box),
                        chart: window.page.chart()};""")
            chart = boxes["chart"]
            canvas = {"left": 0, "top": 0, "right": chart["width"], "bottom": chart["height"]}
            outside = [l["text"] for l in chart["labels"] if not inside(l, canvas)]
            keys_in = all(inside(k, boxes["figure"]) for k in boxes["keys"])
            check(boxes["keys"] and keys_in and inside(boxes["legend"], boxes["figure"]) and
                  abs(boxes["figure"]["width"] - boxes["canvas"]["width"]) <= 4 and outside == [],
                  "%s%s view: the legend's %d keys lie inside the chart (%.0f px wide), and the "
                  "canvas's %d labels inside the canvas (outside: %s)" %
                  (name, " (log axis)" if log else "", len(boxes["keys"]), boxes["figure"]["width"],
                   len(chart["labels"]), outside))
    driver.find_element(By.ID, "tr-log").click()
    metric.select_by_value("loss")


def check_sampling(driver, wait, text, vocab_size):
    """Sampling one token a request: the text grows token by token and the bars follow it; then
    a click (and a hover) on the k-th generated token shows the bars of step k, which are the
    distribution the engine reports for step k of one request with the same seed and settings:
    the same tokens and probabilities, the k-th generated token marked as drawn, and the shown
    bars plus the rest summing to 1."""
    prompt, n, seed, top_k = "And God said", 40, 11, 5
    driver.find_element(By.ID, "sm-prompt").clear()
    driver.find_element(By.ID, "sm-prompt").send_keys(prompt)
    for element_id, value in (("sm-length", n), ("sm-seed", seed)):
        driver.find_element(By.ID, element_id).clear()
        driver.find_element(By.ID, element_id).send_keys(str(value))
    driver.execute_script("const s = document.getElementById('sm-topk'); s.value = arguments[0];"
                          "s.dispatchEvent(new Event('input'));", top_k)
    # Every change of the text and of the bars while it is generated, recorded in the page.
    driver.execute_script("""
        window.seen = [];
        const note = () => window.seen.push([document.querySelectorAll('#sm-text .tok').length,
                                             document.getElementById('sm-bars').dataset.step]);
        window.observer = new MutationObserver(note);
        window.observer.observe(document.getElementById('sm-text'), {childList: true});
        window.observer.observe(document.getElementById('sm-bars'), {childList: true});""")
    driver.find_element(By.ID, "sm-go").click()
    wait(120).until(lambda d: d.find_element(By.ID, "sm-go").is_enabled())
    seen = driver.execute_script("window.observer.disconnect(); return window.seen;")
    lengths = sorted(set(c for c, _ in seen if c > 0))
    followed = sorted(set(int(s) for c, s in seen if s is not None and c < n))
    check(lengths == list(range(1, n + 1)),
          "the text appears token by token: each of the lengths 1 to %d was drawn (%d seen)"
          % (n, len(lengths)))
    check(followed == list(range(n - 1)),
          "the bars follow the generation: those of steps 1 to %d were drawn while it ran (%d)"
          % (n - 1, len(followed)))
    api = driver.execute_async_script(
        "const done = arguments[1];"
        "window.page.workerCall('sample', arguments[0]).then(done, (e) => done({error: e.message}));",
        {"prompt": prompt, "max_new_tokens": n, "temperature": 1, "top_k": top_k, "top_p": 1,
         "seed": seed, "bars": 8})
    shown = driver.execute_script("return document.getElementById('sm-text').textContent;")
    generated = shown[len(prompt):]
    check(shown.startswith(prompt) and generated == api.get("text"),
          "the page's text is the engine's for seed %d: %r" % (seed, generated))
    tokens = driver.find_elements(By.CSS_SELECTOR, "#sm-text .tok")
    read_bars = """
        const bars = [...document.querySelectorAll('#sm-bars .bar')];
        return {step: document.getElementById('sm-bars').dataset.step,
                caption: document.getElementById('sm-step').textContent,
                shown: bars.filter((b) => !b.classList.contains('rest')).map((b) =>
                    [b.dataset.token, +b.dataset.p, b.classList.contains('chosen')]),
                rest: bars.filter((b) => b.classList.contains('rest')).map((b) =>
                    [+b.dataset.p, +b.dataset.tokens])};"""
    problems = []
    click = lambda element: driver.execute_script("arguments[0].click();", element)
    for k in (0, 1, n // 2, n - 1):
        click(tokens[k])
        drawn = driver.execute_script(read_bars)
        want = [[b["token"], b["p"]] for b in api["steps"][k] if b["p"] > 0]
        chosen = [t for t, p, c in drawn["shown"] if c]
        total = sum(p for _, p, _ in drawn["shown"]) + sum(p for p, _ in drawn["rest"])
        if drawn["step"] != str(k) or not drawn["caption"].startswith("Step %d of %d" % (k + 1, n)):
            problems.append("step %d: the bars show step %s (%r)" % (k, drawn["step"], drawn["caption"]))
        if [[t, p] for t, p, _ in drawn["shown"]] != want:
            problems.append("step %d: bars %s, engine %s" % (k, drawn["shown"], want))
        if chosen != [generated[k]] or api["chosen"][k]["token"] != generated[k]:
            problems.append("step %d: marked %s, generated %r" % (k, chosen, generated[k]))
        if abs(total - 1) > 1e-9 or drawn["rest"] != [[api["rest"][k]["p"], vocab_size - len(want)]]:
            problems.append("step %d: bars + rest = %r, rest %s" % (k, total, drawn["rest"]))
        click(tokens[k])  # unpinned again
    check(problems == [], "a click on generated tokens 1, 2, %d and %d shows the engine's bars of "
          "that step (top-k %d: %d bars and the rest), the token drawn marked, summing to 1: %s"
          % (n // 2 + 1, n, top_k, top_k, problems[:2]))
    # Hovering shows a step without a click; leaving the text goes back to the newest.
    k = next(k for k, c in enumerate(generated) if c.isalpha())
    ActionChains(driver).move_to_element(tokens[k]).perform()
    hovered = driver.find_element(By.ID, "sm-bars").get_attribute("data-step")
    ActionChains(driver).move_to_element(driver.find_element(By.ID, "sm-prompt")).perform()
    rested = driver.find_element(By.ID, "sm-bars").get_attribute("data-step")
    check(hovered == str(k) and rested == str(n - 1),
          "hovering token %d shows its step (%s); leaving the text, the last (%s)"
          % (k + 1, hovered, rested))
    # Stop ends a long generation where it is: no token comes after, and the bars are the last's.
    count = lambda: len(driver.find_elements(By.CSS_SELECTOR, "#sm-text .tok"))
    driver.find_element(By.ID, "sm-length").clear()
    driver.find_element(By.ID, "sm-length").send_keys("1000")
    driver.find_element(By.ID, "sm-go").click()
    wait().until(lambda d: count() >= 5)
    driver.find_element(By.ID, "sm-stop").click()
    wait().until(lambda d: d.find_element(By.ID, "sm-go").is_enabled())
    stopped = count()
    time.sleep(0.5)
    check(5 <= stopped == count() < 1000 and
          not driver.find_element(By.ID, "sm-stop").is_enabled() and
          text("sm-step").startswith("Step %d of %d:" % (stopped, stopped)),
          "Stop ends the generation at %d of 1000 tokens: %r" % (stopped, text("sm-step")[:40]))
    driver.find_element(By.ID, "sm-length").clear()
    driver.find_element(By.ID, "sm-length").send_keys(str(n))
    driver.find_element(By.ID, "sm-seed").clear()


def train_pico_flags():
    """examples/train_pico.sh's `attograd train` command as {flag: value} (shlex, as a shell
    splits it), read here on its own, not through the page."""
    with open(os.path.join(WEB_DIR, "examples", "train_pico.sh"), encoding="utf-8") as f:
        script = f.read().replace("\\\n", " ")
    command = next(line for line in script.split("\n") if "attograd train " in line)
    words = shlex.split(command)[2:]
    flags = {}
    i = 0
    while i < len(words):
        if words[i].startswith("--"):
            has_value = i + 1 < len(words) and not words[i + 1].startswith("--")
            flags[words[i]] = words[i + 1] if has_value else True
            i += 2 if has_value else 1
        else:
            i += 1  # "$@"
    return flags


def set_box(driver, element_id, value, event="input"):
    driver.execute_script("const e = document.getElementById(arguments[0]); e.value = arguments[1];"
                          "e.dispatchEvent(new Event(arguments[2]));", element_id, str(value), event)


def check_homework(driver, wait, text):
    """The homework 11 preset is examples/train_pico.sh's command: Build with it trains pico on the
    King James Bible with every training option of the script (the engine's options after Build,
    compared flag by flag through the engine's table of flags); the val curve starts at step 0
    with the script's early evaluations; the chart's draws are throttled while the worker reports
    more often, its running mean is the mean of the last `mean_over` train points, its x ticks
    are round steps, and it is drawn at the screen's pixel ratio; a setting changed during the
    run is said at once, and Steps changed during the run is applied."""
    flags = train_pico_flags()
    names = driver.execute_script("return window.page.engine.info().train_flags;")
    driver.find_element(By.ID, "tr-homework").click()
    wait().until(lambda d: text("tr-homework-line") != "" or text("tr-error") != "")
    check(text("tr-error") == "" and text("tr-homework-line").startswith(
              "examples/train_pico.sh: attograd train --preset pico --corpus kjv --steps 20000"),
          "the homework preset shows train_pico.sh's command: %r" % text("tr-homework-line"))
    model = driver.find_element(By.ID, "tr-model").get_attribute("value")
    corpus = driver.find_element(By.ID, "tr-text").get_attribute("value")
    check(model == flags["--preset"] == "pico" and corpus == flags["--corpus"] == "kjv",
          "the preset's model is %s and its text %s, train_pico.sh's --preset and --corpus" % (model, corpus))
    driver.find_element(By.ID, "tr-build").click()
    wait(120).until(lambda d: text("tr-info").startswith("gpt") or text("tr-error") != "")
    built = driver.execute_script("return window.page.built();")
    with open(os.path.join(WEB_DIR, "kjv.txt"), encoding="utf-8") as f:
        kjv_chars = len(f.read())
    # --log-interval sets the CLI's progress lines, which the page does not print.
    training = {f: v for f, v in flags.items() if f in names and f != "--log-interval"}
    wrong = [(f, v, built["options"][names[f]]) for f, v in training.items()
             if float(v) != built["options"][names[f]]]
    check(len(training) == 8 and wrong == [],
          "Build with the preset trains with train_pico.sh's %d training options (%s): %s" %
          (len(training), " ".join("%s %s" % fv for fv in training.items()), wrong or "all equal"))
    c = built["config"]
    check((c["n_layer"], c["n_head"], c["n_embd"]) == (3, 3, 6) and
          built["train_tokens"] + built["val_tokens"] == kjv_chars and
          "the King James Bible" in text("tr-file-name"),
          "on the King James Bible (%d characters, as attograd train's kjv): %r" % (kjv_chars, text("tr-info")))
    # Train: step 0's evaluation, then the early ones every 100 steps. At the first report, a
    # setting changed during the run is said at once, and Steps is applied (1,500: the run is
    # short of it by then, and still in the early evaluations).
    driver.find_element(By.ID, "tr-start").click()
    wait(300).until(lambda d: d.execute_script("return window.page.trainingStep();") >= 1)
    set_box(driver, "tr-batch", "32")
    changed = text("tr-changed")
    check(changed == "Changed since Build: batch 64 \u2192 32. The run goes on with Build's settings; "
          "press Build to start a model with the new ones, or set them back.",
          "a batch changed during the run is said at once: %r" % changed)
    set_box(driver, "tr-batch", "64")
    check(text("tr-changed") == "", "set back, the message goes")
    set_box(driver, "tr-steps", "1500", "change")
    wait().until(lambda d: text("tr-changed") != "" or text("tr-error") != "")
    check(text("tr-changed") == "Steps applied to the run going on: it now ends at step 1500." and
          text("tr-error") == "", "Steps changed during the run is applied: %r" % text("tr-changed"))
    count = lambda: driver.execute_script("return window.page.chartCounts();")
    before, started = count(), time.time()
    time.sleep(3)
    after, seconds = count(), time.time() - started
    draws, reports = after["draws"] - before["draws"], after["reports"] - before["reports"]
    check(1 <= draws <= after["hz"] * seconds + 2 and reports > draws,
          "the chart is redrawn %d times in %.1f s (at most %d a second) while the worker reported %d "
          "times" % (draws, seconds, after["hz"], reports))
    wait(600).until(lambda d: "done" in text("tr-progress"))
    check(text("tr-progress").startswith("step 1500 / 1500"), "the run ends at the new Steps: %r"
          % text("tr-progress"))
    chart = driver.execute_script("return window.page.chart();")
    val_steps = [v[0] for v in chart["val"]]
    check(val_steps == list(range(0, 1501, 100)),
          "the val curve starts at step 0 and has train_pico.sh's early evaluations: %s" % val_steps)
    check(text("tr-plateau") == "", "pico's run has no plateau note")
    # The running mean over the chart's own train points, computed here.
    n, train = chart["mean_over"], chart["train"]
    mean = [[train[i][0], sum(v for _, v in train[max(0, i - n + 1):i + 1]) / (i + 1 - max(0, i - n + 1))]
            for i in range(len(train))]
    worst = max(abs(a[1] - b[1]) for a, b in zip(mean, chart["smooth"]))
    check(n == 8 and len(chart["smooth"]) == len(train) == 1500 and worst < 1e-9 and
          [a[0] for a in mean] == [b[0] for b in chart["smooth"]],
          "the smoothed curve is the mean of the last %d train losses at each of %d steps (%.1e)"
          % (n, len(train), worst))
    known = driver.execute_script(
        "return window.page.runningMean([[1, 1], [2, 2], [3, 6], [4, NaN], [5, 10], [6, NaN], [7, NaN]], 2);")
    check(known == [[1, 1], [2, 1.5], [3, 4], [4, 6], [5, 10], [6, 10]],
          "the running mean of a known series, non-finite values left out: %s" % known)
    check(chart["x_ticks"] == [0, 500, 1000, 1500] and
          all(any(l["text"] == format(t, ",") for l in chart["labels"]) for t in chart["x_ticks"]),
          "the x axis has ticks at %s, labelled" % chart["x_ticks"])
    # At a pixel ratio of 2 the canvas has twice the pixels, at the same size on the page.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1200, "height": 2400, "deviceScaleFactor": 2, "mobile": False})
    Select(driver.find_element(By.ID, "tr-metric")).select_by_value("perplexity")
    Select(driver.find_element(By.ID, "tr-metric")).select_by_value("loss")
    hidpi = driver.execute_script("""
        const c = document.getElementById('tr-chart');
        return {width: c.width, height: c.height, css: c.clientWidth,
                dpr: window.page.chart().dpr};""")
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    check(hidpi == {"width": 1520, "height": 560, "css": 760, "dpr": 2},
          "at devicePixelRatio 2 the chart has 1520 x 560 pixels shown 760 wide: %s" % hidpi)


def check_divergence_and_plateau(driver, wait, text):
    """A learning rate far too high (50): the loss climbs to about 1e17 and the engine refuses the
    NaN that follows; the chart keeps the steps before the refusal, and in the loss view (values
    up to 1e17) and the perplexity view (e^loss infinite, left out) its tick labels stay short
    numbers (no 18-digit loss, no 44-digit perplexity, no NaN or Infinity), inside the canvas.
    femto's plateau at the unigram is explained where it happens."""
    Select(driver.find_element(By.ID, "tr-text")).select_by_value("genesis")
    Select(driver.find_element(By.ID, "tr-model")).select_by_value("pico")
    for element_id, value in (("tr-steps", 200), ("tr-batch", 16), ("tr-lr", 50), ("tr-min_lr", 0.001),
                              ("tr-warmup_steps", 0), ("tr-eval_interval", 20), ("tr-eval_early", 0),
                              ("tr-eval_iters", 2)):
        set_box(driver, element_id, value)
    driver.find_element(By.ID, "tr-build").click()
    wait(120).until(lambda d: d.find_element(By.ID, "tr-start").is_enabled() and text("tr-info").startswith("gpt"))
    driver.find_element(By.ID, "tr-start").click()
    wait(300).until(lambda d: "done" in text("tr-progress") or text("tr-error") != "")
    check(re.match(r"the training loss became nan at step \d+", text("tr-error")) is not None,
          "learning rate 50 diverges and the page says so: %r" % text("tr-error")[:80])
    canvas = None
    for view in ("loss", "perplexity"):
        Select(driver.find_element(By.ID, "tr-metric")).select_by_value(view)
        chart = driver.execute_script("return window.page.chart();")
        canvas = {"left": 0, "top": 0, "right": chart["width"], "bottom": chart["height"]}
        # (an infinite perplexity comes through JSON as None)
        drawn = [v for _, v in chart["train"] if v is not None]
        short = all(re.fullmatch(r"\d+(\.\d+)?(e[+-]\d+)?", t) and len(t) <= 8 for t in chart["y_ticks"])
        check(len(chart["train"]) >= 5 and (max(drawn) > 1e12 if view == "loss" else len(drawn) < len(chart["train"]))
              and short and all(inside(l, canvas) for l in chart["labels"]),
              "%s view of the diverged run (%d steps, %d finite, up to %.3g): the tick labels %s stay short, "
              "inside the canvas" % (view, len(chart["train"]), len(drawn), max(drawn), chart["y_ticks"]))
    Select(driver.find_element(By.ID, "tr-metric")).select_by_value("loss")
    # femto on Genesis: the val loss comes down to the unigram and stays; the page says why there.
    Select(driver.find_element(By.ID, "tr-model")).select_by_value("femto")
    for element_id, value in (("tr-steps", 300), ("tr-batch", 32), ("tr-lr", 0.01), ("tr-warmup_steps", 30),
                              ("tr-eval_interval", 30), ("tr-eval_iters", 10)):
        set_box(driver, element_id, value)
    driver.find_element(By.ID, "tr-build").click()
    wait(120).until(lambda d: d.find_element(By.ID, "tr-start").is_enabled() and
                    "n_embd 2" in text("tr-info"))
    driver.find_element(By.ID, "tr-start").click()
    wait(300).until(lambda d: "done" in text("tr-progress"))
    built = driver.execute_script("return window.page.built();")
    plateau = text("tr-plateau")
    m = re.match(r"femto has reached the unigram baseline \(val loss ([0-9.]+) at step (\d+), unigram "
                 r"([0-9.]+)\) and will stay about there: its layer norm normalises n_embd = 2 numbers", plateau)
    check(m is not None and abs(float(m.group(1)) - built["unigram_loss"]) <= 0.1 and
          abs(float(m.group(3)) - built["unigram_loss"]) < 1e-4,
          "femto's plateau at the unigram is explained: %r" % plateau[:160])


def cells(driver, table_id):
    """The cells of a workbench table, row by row: text, title, class, value (data-w, absent for
    a masked or non-finite cell) and the colour the browser drew (r, g, b, alpha)."""
    return driver.execute_script("""
        const table = document.getElementById(arguments[0]);
        if (!table) return null;
        return [...table.querySelectorAll('tr')].map((tr) => [...tr.querySelectorAll('td:not(.sum)')].map((td) => {
          const c = getComputedStyle(td).backgroundColor.match(/[0-9.]+/g).map(Number);
          return {text: td.textContent, title: td.title, cls: td.className,
                  w: td.dataset.w === undefined ? null : Number(td.dataset.w),
                  rgba: c.length === 3 ? [...c, 1] : c,
                  image: getComputedStyle(td).backgroundImage};
        })).filter((row) => row.length > 0);""", table_id)


def select_preset(driver, name):
    Select(driver.find_element(By.ID, "wb-preset")).select_by_value(name)


def workbench_z(driver):
    return [[float(td["text"]) for td in row] for row in cells(driver, "wb-Z")]


def causal_attention(Q, K, V):
    """Scaled causal softmax attention written out here, the test's own oracle for the page's
    numbers (Q, K (T, d_k) and V (T, d_v) as lists of rows)."""
    d_k = len(Q[0])
    out = []
    for t, q in enumerate(Q):
        s = [sum(a * b for a, b in zip(q, K[j])) / math.sqrt(d_k) for j in range(t + 1)]
        e = [math.exp(x - max(s)) for x in s]
        out.append([sum(e[j] * V[j][c] for j in range(t + 1)) / sum(e) for c in range(len(V[0]))])
    return out


def columns(M, lo, hi):
    return [row[lo:hi] for row in M]


def check_workbench_heat(driver, text):
    """S, the masked scores and A are drawn as heat cells: each cell's colour is blue for a positive
    value and red for a negative one, its alpha |x| / the matrix's largest |x| (so the largest weight
    is the most saturated), the mask's −∞ cells hatched grey; hover titles are rounded; at T = 64
    the tables are colours only (numbers on hover) and fit the page."""
    select_preset(driver, "two_heads")  # Q and K with negative products: red cells too
    Select(driver.find_element(By.ID, "wb-heads")).select_by_value("1")
    for table in ("wb-S", "wb-mask", "wb-A"):
        rows = cells(driver, table)
        values = [c["w"] for row in rows for c in row if c["w"] is not None]
        scale = max(abs(w) for w in values)
        problems = []
        for i, row in enumerate(rows):
            for j, c in enumerate(row):
                if c["w"] is None:
                    continue
                blue = c["rgba"][:3] == [48, 96, 192]
                if abs(c["rgba"][3] - abs(c["w"]) / scale) > 2e-3 or blue != (c["w"] >= 0):
                    problems.append((i, j, c["w"], c["rgba"]))
        strongest = max((c for row in rows for c in row if c["w"] is not None), key=lambda c: c["rgba"][3])
        check(problems == [] and strongest["w"] == max(values, key=abs) and any(w < 0 for w in values) == (table != "wb-A"),
              "%s: each cell's colour is its value's sign and |x| / %.4f, the largest |x| the most saturated "
              "(%s)" % (table, scale, problems[:3]))
        titles = [c["title"] for row in rows for c in row if c["w"] is not None]
        check(all(re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", t) and len(re.sub(r"e.*|[-.]|^0\.0*", "", t)) <= 6
                  and abs(float(t) - w) <= 1e-5 * abs(w) for t, w in zip(titles, values)),
              "%s's hover titles are its values to 6 significant digits: %s" % (table, titles[:4]))
    masked = cells(driver, "wb-mask")
    spots = [(i, j) for i, row in enumerate(masked) for j, c in enumerate(row) if "masked" in c["cls"]]
    check(spots == [(i, j) for i in range(3) for j in range(3) if j > i] and
          all(masked[i][j]["text"] == "\u2212\u221e" and "repeating-linear-gradient" in masked[i][j]["image"]
              for i, j in spots),
          "the mask's −∞ cells, and only they, are hatched: %s" % spots)
    a = cells(driver, "wb-A")
    check(all("dark" in c["cls"] for row in a for c in row if c["w"] is not None and c["w"] > 0.9),
          "a weight near 1 is written in white on its strong blue")
    # T = 64: colours only, each number on hover, and the (64, 64) tables fit the page's width.
    rows = "; ".join("%d, %d" % (i % 7 - 3, (i * 3) % 5 - 2) for i in range(64))
    set_box(driver, "wb-Q", rows)
    set_box(driver, "wb-K", rows)
    set_box(driver, "wb-V", rows)
    big = driver.execute_script("""
        return ['wb-S', 'wb-mask', 'wb-A'].map((id) => {
          const t = document.getElementById(id);
          return {id, compact: t.classList.contains('compact'), width: t.getBoundingClientRect().width,
                  rows: t.querySelectorAll('tr').length, texts: [...t.querySelectorAll('td:not(.sum)')]
                      .filter((td) => td.textContent !== '').length,
                  titled: [...t.querySelectorAll('td:not(.sum)')].every((td) => td.title !== '')};
        });""")
    page = driver.execute_script("return document.getElementById('part1').clientWidth;")
    check(all(b["compact"] and b["texts"] == 0 and b["titled"] and b["width"] < page and b["rows"] >= 64
              for b in big),
          "at T = 64, S, the mask and A are colours with their numbers on hover, each narrower than the "
          "page (%d px): %s" % (page, [(b["id"], round(b["width"])) for b in big]))


def check_phone_workbench(driver):
    """At a 360-pixel-wide window the Q, K and V boxes fit and the page does not scroll sideways,
    even with the workbench's (64, 64) tables drawn (each scrolls inside its own box), and with
    two heads' tables side by side."""
    measure = """
        const e = document.documentElement;
        return {scroll: e.scrollWidth, client: e.clientWidth,
                boxes: ['wb-Q', 'wb-K', 'wb-V'].map((id) => document.getElementById(id).getBoundingClientRect().right)};"""
    driver.set_window_size(360, 800)
    time.sleep(0.5)
    fit = driver.execute_script(measure)
    rows = "; ".join(["1, 2, 3, 4"] * 8)
    for box in ("wb-Q", "wb-K", "wb-V"):
        set_box(driver, box, rows)
    Select(driver.find_element(By.ID, "wb-heads")).select_by_value("2")
    time.sleep(0.3)
    heads = driver.execute_script(measure)
    Select(driver.find_element(By.ID, "wb-heads")).select_by_value("1")
    driver.set_window_size(1200, 2400)
    time.sleep(0.5)
    check(fit["client"] <= 360 and fit["scroll"] <= fit["client"] and max(fit["boxes"]) <= fit["client"],
          "at 360 px wide the Q, K and V boxes fit and the page does not scroll sideways: %s" % fit)
    check(heads["scroll"] <= heads["client"],
          "at 360 px wide two heads of (8, 4) matrices do not widen the page: %s" % heads)


def check_presets_follow(driver, text):
    """The preset menu names the preset whose Q, K and V the boxes hold (as the engine reads them),
    or "custom"; the averaging preset's Z is the running mean of V."""
    value = lambda: driver.find_element(By.ID, "wb-preset").get_attribute("value")
    select_preset(driver, "t3")
    set_box(driver, "wb-Q", "1, 0; 0, 1; 1, 2")
    check(value() == "custom", "an edited Q that matches no preset shows 'custom': %r" % value())
    set_box(driver, "wb-Q", "1,0\n0,1\n1,1")
    check(value() == "t3", "edited back (written differently), the menu names the preset again: %r" % value())
    for box, matrix in (("wb-Q", "1;2"), ("wb-K", "1\n3"), ("wb-V", "10; 20;")):
        set_box(driver, box, matrix)
    check(value() == "lecture", "Q, K and V typed as the lecture's: the menu says 'lecture': %r" % value())
    set_box(driver, "wb-V", "10; 2x")
    check(value() == "custom" and text("wb-error") != "", "a V the engine refuses is 'custom': %r" % value())
    # The heads are part of a preset: "two heads" at one head is custom, and choosing it again
    # sets its two heads back.
    heads = Select(driver.find_element(By.ID, "wb-heads"))
    select_preset(driver, "two_heads")
    heads.select_by_value("1")
    at_one = value()
    select_preset(driver, "two_heads")
    check(at_one == "custom" and value() == "two_heads" and heads.first_selected_option.get_attribute("value") == "2",
          "two_heads at 1 head is 'custom' (%r), and chosen again it has 2 heads" % at_one)
    heads.select_by_value("1")

    names = [p["name"] for p in driver.execute_script("return window.page.engine.info().workbench_presets;")]
    select_preset(driver, "average")
    V = [[1, 10], [2, 20], [3, 30]]
    means = [[sum(V[j][c] for j in range(t + 1)) / (t + 1) for c in range(2)] for t in range(3)]
    z = workbench_z(driver)
    a = [[c["w"] for c in row] for row in cells(driver, "wb-A")]
    check("average" in names and [[round(x, 6) for x in row] for row in z] == means and
          all(abs(w - 1 / (t + 1)) < 1e-15 for t, row in enumerate(a) for w in row[:t + 1]),
          "the engine's averaging preset: A is uniform over the visible keys and Z = %s, the running "
          "means of V's rows %s" % (z, means))


def check_heads(driver, text):
    """Two heads: each attends with its half of Q's and K's columns (and of V's), and Z is their
    outputs side by side; one head is the workbench's usual output."""
    heads = Select(driver.find_element(By.ID, "wb-heads"))
    select_preset(driver, "t3")
    Q = K = [[1, 0], [0, 1], [1, 1]]
    V = [[1, 2], [3, 4], [5, 6]]
    one = workbench_z(driver)
    check(driver.find_elements(By.ID, "wb-head-0") == [] and
          all(abs(x - y) < 1e-6 for r, s in zip(one, causal_attention(Q, K, V)) for x, y in zip(r, s)),
          "one head: the usual steps, Z = %s" % one)
    same = driver.execute_script("""
        const e = window.page.engine, r = {Q: '1, 0; 0, 1; 1, 1', K: '1, 0; 0, 1; 1, 1', V: '1, 2; 3, 4; 5, 6'};
        return JSON.stringify(e.attention(r)) === JSON.stringify(e.attention({...r, heads: 1}));""")
    check(same, "the engine's answer with heads 1 is its answer without the field")
    heads.select_by_value("2")
    want = [a + b for a, b in zip(causal_attention(columns(Q, 0, 1), columns(K, 0, 1), columns(V, 0, 1)),
                                  causal_attention(columns(Q, 1, 2), columns(K, 1, 2), columns(V, 1, 2)))]
    z = workbench_z(driver)
    per_head = [[[float(c["text"]) for c in row] for row in cells(driver, "wb-Z-h%d" % h)] for h in (0, 1)]
    split = [[float(c["text"]) for c in row] for row in cells(driver, "wb-Q-h1")]
    check(all(abs(x - y) < 1e-6 for r, s in zip(z, want) for x, y in zip(r, s)) and len(z[0]) == 2 and
          [a + b for a, b in zip(*per_head)] == z and split == columns(Q, 1, 2) and
          len(driver.find_elements(By.CSS_SELECTOR, "#wb-head-1 #wb-A-h1")) == 1,
          "two heads: head 2 takes Q's column 1, and Z = concat(Z_1, Z_2) = %s (computed here: %s)" % (z, want))
    select_preset(driver, "two_heads")
    z = workbench_z(driver)
    check(heads.first_selected_option.get_attribute("value") == "2" and
          all(abs(x - y) < 1e-6 for r, s in zip(z, [[1, 10], [1, 20], [1, 30]]) for x, y in zip(r, s)),
          "the two-heads preset: head 1 copies token 0's value, head 2 each token's own: Z = %s" % z)
    select_preset(driver, "lecture")
    check(heads.first_selected_option.get_attribute("value") == "1" and workbench_z(driver) == [[10], [19.820138]],
          "a one-head preset sets heads back to 1")
    heads.select_by_value("2")
    check(text("wb-error").startswith("heads is 2, but d_k = 1 and d_v = 1 do not both split into 2 equal parts"),
          "two heads of a d_k of 1 are refused with the reason: %r" % text("wb-error"))
    heads.select_by_value("1")


def check_guess_enter(driver, text):
    """Enter in the guess box checks the guess, as the Check button does."""
    select_preset(driver, "lecture")
    driver.find_element(By.ID, "wb-predict").click()
    hidden = driver.find_elements(By.CSS_SELECTOR, "#wb-Z td") == []
    driver.find_element(By.ID, "wb-guess").clear()
    driver.find_element(By.ID, "wb-guess").send_keys("19.8" + Keys.ENTER)
    check(hidden and "it is 19.820138" in text("wb-verdict") and
          [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")] == ["10", "19.820138"],
          "Enter in the guess box checks it and reveals Z: %r" % text("wb-verdict"))
    driver.find_element(By.ID, "wb-predict").click()


def check_rope_dial(driver, text):
    """RoPE's dials: per channel pair i, the marks of q's and k's angles point at m·θ_i and n·θ_i
    (mod 2π), θ_i = 10000^(−2i/d) as the engine's rope answer gives it, and follow m and n."""
    for m, n in ((5, 2), (9, 14)):
        set_box(driver, "rope-m", m)
        set_box(driver, "rope-n", n)
        q, k = (driver.find_element(By.ID, i).get_attribute("value") for i in ("rope-q", "rope-k"))
        pairs = driver.execute_script("return window.page.engine.rope(arguments[0], arguments[1], "
                                      "arguments[2], arguments[3]).pairs;", q, k, m, n)
        marks = driver.execute_script("""
            return [...document.querySelectorAll('#rope-dial svg')].map((svg) => ['m', 'n'].map((w) => {
              const line = svg.querySelector('.mark-' + w);
              return Math.atan2(-line.getAttribute('y2'), +line.getAttribute('x2'));
            }));""")
        d = 2 * len(pairs)
        turn = lambda a: a % (2 * math.pi)
        apart = lambda a, b: min(abs(turn(a) - turn(b)), 2 * math.pi - abs(turn(a) - turn(b)))
        problems = [(i, am, an) for i, ((am, an), p) in enumerate(zip(marks, pairs))
                    if abs(p["theta"] - 10000 ** (-2 * i / d)) > 1e-12
                    or apart(am, m * p["theta"]) > 1e-3 or apart(an, n * p["theta"]) > 1e-3]
        check(len(marks) == d // 2 == 2 and problems == [] and
              "(%d \u2212 %d)\u00b7\u03b8" % (m, n) in text("rope-dial"),
              "the RoPE dials at m = %d, n = %d mark m·θ_i and n·θ_i of the engine's θ %s: %s"
              % (m, n, [round(p["theta"], 6) for p in pairs], problems))
    set_box(driver, "rope-m", 5)
    set_box(driver, "rope-n", 2)


def check_phone_width(driver):
    """On a phone (390 CSS pixels wide, emulated) part 3 fits the width: its boxes, its two
    selects with long option texts and the chart (part 1's boxes: check_phone_workbench)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 2400, "deviceScaleFactor": 3, "mobile": True})
    time.sleep(0.5)
    wide = driver.execute_script("""
        const view = document.documentElement.clientWidth, out = [];
        for (const e of document.querySelectorAll('#part3 *')) {
          const right = e.getBoundingClientRect().right;
          if (right > view + 1) out.push((e.id || e.tagName) + ' ' + Math.round(right));
        }
        return {view, out, chart: document.getElementById('tr-chart').getBoundingClientRect().right};""")
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    check(wide["view"] == 390 and wide["out"] == [] and wide["chart"] <= 390,
          "on a phone's width (390 px) part 3 and its chart fit: %s" % wide)


def check_file_page(driver, web_dir):
    """The page opened from disk (file://), where its engine cannot start: the status says so
    and how to serve it."""
    driver.get("file://" + os.path.join(web_dir, "index.html"))
    time.sleep(1)
    status = driver.find_element(By.ID, "status").text
    check("opened as a file" in status and "bash scripts/playground.sh" in status,
          "opened as file://, the page says to serve it: %r" % status)


def main():
    if FIXTURE_DIR is None or not os.path.exists(os.path.join(FIXTURE_DIR, "prompt.txt")):
        print("browser_test: give the native fixture directory (tests/web/native_fixture.sh)")
        return 1
    os.makedirs(OUT_DIR, exist_ok=True)
    server, base = serve(WEB_DIR, requests)
    driver = start_browser("1200,2400")
    wait = lambda seconds=60: WebDriverWait(driver, seconds)
    text = lambda element_id: driver.find_element(By.ID, element_id).text
    shot = lambda part: driver.find_element(By.ID, part).screenshot(
        os.path.join(OUT_DIR, part + ".png"))
    try:
        # The first load: the page, its engine and the worker's, until the engine is ready.
        started = time.time()
        driver.get(base + "index.html")
        driver.execute_async_script(
            "const done = arguments[0]; window.page.ready.then(() => done(true));")
        seconds = time.time() - started
        loaded = sorted(set(r.split("?")[0].lstrip("/") for r in requests))
        size = sum(os.path.getsize(os.path.join(WEB_DIR, p)) for p in loaded if p in OWN_FILES)
        print("first load: %.2f s, %d bytes (%s)" % (seconds, size, ", ".join(loaded)), flush=True)
        check(size < 5e6, "the first load is under 5 MB: %.2f MB" % (size / 1e6))
        check("Highway target WASM" in text("status"), "the engine reports its target: %r" % text("status"))

        # Part 1: the lecture's preset, then column mode, predict-then-check, a ragged Q.
        z = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")]
        check(z == ["10", "19.820138"], "the workbench preset shows Z = %s (10 and 19.820138)" % z)
        sums = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-A td.sum")]
        check(sums == ["1", "1"], "row sums of A are 1: %s" % sums)
        check(text("wb-warning") == "", "the right softmax raises no warning")
        shot("part1")
        Select(driver.find_element(By.ID, "wb-softmax")).select_by_value("column")
        warning = text("wb-warning")
        check("no longer sum to 1" in warning and "leaves the range of V" in warning,
              "column mode flags the row sums and Z: %r" % warning)
        Select(driver.find_element(By.ID, "wb-softmax")).select_by_value("row")
        driver.find_element(By.ID, "wb-predict").click()
        hidden = driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")
        check(hidden == [] and "hidden until" in text("wb-steps"), "predict mode hides Z")
        driver.find_element(By.ID, "wb-check").click()
        check(text("wb-verdict") == "Type the number you expect for Z[1, 0] first, then press Check."
              and driver.find_elements(By.CSS_SELECTOR, "#wb-Z td") == [],
              "Check without a guess asks for one and keeps Z hidden: %r" % text("wb-verdict"))
        driver.find_element(By.ID, "wb-guess").send_keys("19.8abc")
        driver.find_element(By.ID, "wb-check").click()
        check(text("wb-verdict") == "'19.8abc' is not a number: type the number you expect for Z[1, 0], e.g. "
              "19.8, then press Check." and driver.find_elements(By.CSS_SELECTOR, "#wb-Z td") == [],
              "a guess that is not a number is refused and Z stays hidden: %r" % text("wb-verdict"))
        driver.find_element(By.ID, "wb-guess").clear()
        driver.find_element(By.ID, "wb-guess").send_keys("0x13")  # Number() would read 19
        driver.find_element(By.ID, "wb-check").click()
        check(text("wb-verdict").startswith("'0x13' is not a number") and
              driver.find_elements(By.CSS_SELECTOR, "#wb-Z td") == [],
              "a hexadecimal guess is no decimal, refused as the boxes refuse 0x10: %r" % text("wb-verdict"))
        driver.find_element(By.ID, "wb-guess").clear()
        driver.find_element(By.ID, "wb-guess").send_keys("19.8")
        driver.find_element(By.ID, "wb-check").click()
        check("it is 19.820138" in text("wb-verdict"), "checking a guess reveals Z: %r" % text("wb-verdict"))
        driver.find_element(By.ID, "wb-predict").click()
        q = driver.find_element(By.ID, "wb-Q")
        q.clear()
        q.send_keys("1, 2; 3")
        error = text("wb-error")
        check(error.startswith("Q: row 2 has 1 number but row 1 has 2"), "a ragged Q is refused: %r" % error)
        q.clear()
        q.send_keys("1; 2")
        z = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")]
        check(text("wb-error") == "" and z == ["10", "19.820138"], "after a fix the workbench works again")
        # Rows typed one a line, as a matrix is written by hand, read as rows separated by ';'.
        for box, lines in (("wb-Q", "1\n2"), ("wb-K", "1;\n3\n"), ("wb-V", "10\n\n20")):
            driver.find_element(By.ID, box).clear()
            driver.find_element(By.ID, box).send_keys(lines)
        z = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")]
        check(text("wb-error") == "" and z == ["10", "19.820138"],
              "rows on separate lines are rows: Z = %s (%r)" % (z, text("wb-error")))
        q.clear()
        q.send_keys("1, 2\n3")
        check(text("wb-error").startswith("Q: row 2 has 1 number but row 1 has 2; every row needs the "
                                          "same count (write rows separated by ';' or on separate lines"),
              "a ragged Q on lines says the format: %r" % text("wb-error"))
        q.clear()
        q.send_keys("1; 2")
        # The size limit (T, d_k, d_v <= 64), checked on the text before the engine is called
        # (its calls are counted): 65 rows and a row of 65 numbers are refused, 64 rows work.
        sized = lambda q, k, v: driver.execute_script("""
            const e = window.page.engine, attention = e.attention;
            let calls = 0;
            e.attention = (r) => { ++calls; return attention(r); };
            const [q, k, v] = arguments;
            document.getElementById('wb-Q').value = q;
            document.getElementById('wb-K').value = k;
            const box = document.getElementById('wb-V');
            box.value = v;
            const before = performance.now();
            box.dispatchEvent(new Event('input'));
            const ms = performance.now() - before;
            e.attention = attention;
            return {calls, ms, error: document.getElementById('wb-error').textContent,
                    z: document.querySelectorAll('#wb-Z tr').length};""", q, k, v)
        rows = lambda n: "; ".join(["1"] * n)
        r = sized(rows(65), rows(65), rows(65))
        check(r["calls"] == 0 and r["z"] == 0 and r["error"] ==
              "Q has 65 rows: the workbench takes at most 64 rows (T \u2264 64), so that its tables stay "
              "readable and the page answers at once. Remove rows.",
              "65 rows are refused before the engine runs: %r (%.0f ms)" % (r["error"], r["ms"]))
        r = sized(rows(8000), rows(8000), rows(8000))
        check(r["calls"] == 0 and r["error"].startswith("Q has 8000 rows: the workbench takes at most 64"),
              "8000 rows are refused before the engine runs (%.0f ms)" % r["ms"])
        r = sized("1;2", ", ".join(["1"] * 65) + "; " + ", ".join(["1"] * 65), "10;20")
        check(r["calls"] == 0 and r["error"].startswith("K has a row of 65 numbers: the workbench takes "
                                                         "at most 64 numbers a row (d_k and d_v \u2264 64)"),
              "a row of 65 numbers is refused: %r" % r["error"])
        r = sized("1;2;", "1;3;", "10;20;")
        check(r["calls"] == 1 and r["error"] == "" and r["z"] == 2,
              "a trailing ';' ends the last row as a trailing line break does: %r" % r["error"])
        row64 = ", ".join(["1"] * 64) + ","
        r = sized("1;2", row64 + "; " + row64, "10;20")
        check(r["calls"] == 1 and r["error"].startswith("Q is 2x1 and K is 2x64"),
              "64 numbers and a trailing comma are a row of 64, and reach the engine: %r" % r["error"])
        r = sized(rows(64), rows(64), rows(64))
        check(r["calls"] == 1 and r["error"] == "" and r["z"] == 64,
              "64 rows are shown: Z has %d rows (drawn in %.0f ms)" % (r["z"], r["ms"]))
        Select(driver.find_element(By.ID, "wb-preset")).select_by_value("t3")
        Select(driver.find_element(By.ID, "wb-preset")).select_by_value("lecture")
        z = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#wb-Z td")]
        check(text("wb-error") == "" and z == ["10", "19.820138"], "the preset works again after the limit")
        check_workbench_heat(driver, text)
        check_phone_workbench(driver)
        check_presets_follow(driver, text)
        check_heads(driver, text)
        check_guess_enter(driver, text)
        select_preset(driver, "lecture")

        # Part 2: positions.
        cells = driver.find_elements(By.CSS_SELECTOR, "#pe-table td")
        check(len(cells) >= 16 * 16, "the sinusoidal table is drawn (%d cells)" % len(cells))
        rope = driver.execute_script("return window.page.ropeScores();")
        diffs = {}
        for m, n, s in rope:
            diffs.setdefault(m - n, []).append(s)
        spread = max(max(v) - min(v) for v in diffs.values())
        check(len(diffs) > 3 and spread < 1e-9,
              "the RoPE score depends only on m - n (spread %.1e over %d offsets)" % (spread, len(diffs)))
        order = driver.execute_script("return window.page.orderExperiment();")
        check(order["mean_same"] and order["attention_without_positions_same"]
              and not order["attention_with_positions_same"],
              "reordering \"dog bites man\": the mean stays, attention with positions changes: %s" % order)
        # A T the table cannot take: the message, and no table left over from the last one.
        for typed, want in (("0", "positions T is 0: type a whole number from 1 to 128."),
                             ("1000", "positions T is 1000: this page takes at most 128; a bigger table "
                                      "stops fitting the page, and the pattern shows at this size."),
                             ("", "positions T is empty (or not a number): type a whole number from 1 "
                                  "to 128.")):
            driver.find_element(By.ID, "pe-T").clear()
            driver.find_element(By.ID, "pe-T").send_keys(typed)
            driver.execute_script("document.getElementById('pe-T').dispatchEvent(new Event('input'));")
            check(text("pe-error") == want and not driver.find_elements(By.CSS_SELECTOR, "#pe-table"),
                  "positions T %r: the table goes and the page says %r" % (typed, text("pe-error")))
        driver.find_element(By.ID, "pe-T").send_keys("32")
        check(text("pe-error") == "" and len(driver.find_elements(By.CSS_SELECTOR, "#pe-table tr")) == 33,
              "positions T 32 draws the table again")
        # An odd n_embd: the table's columns are sin/cos pairs.
        set_value = lambda element_id, value: driver.execute_script(
            "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
            "e.dispatchEvent(new Event('input'));", element_id, value)
        set_value("pe-C", "3")
        check(text("pe-error") == "n_embd is 3: type an even number. The table's columns come in pairs, a sine "
              "and a cosine of the same frequency." and not driver.find_elements(By.CSS_SELECTOR, "#pe-table"),
              "an odd n_embd is refused with the reason: %r" % text("pe-error"))
        set_value("pe-C", "16")
        check(text("pe-error") == "" and len(driver.find_elements(By.CSS_SELECTOR, "#pe-table tr td")) == 32 * 16,
              "n_embd 16 draws the table again")
        # A score that overflows: refused as the workbench refuses Z, never shown as -inf.
        old_q, old_k = (driver.find_element(By.ID, i).get_attribute("value") for i in ("rope-q", "rope-k"))
        set_value("rope-q", "1e200, 0")
        set_value("rope-k", "1e200, 0")
        check(text("rope-error") == "the score q\u00b7k overflowed to a non-finite number: use smaller values "
              "in q or k" and text("rope-result") == "" and "\u2212\u221e" not in text("part2"),
              "an overflowing RoPE score is refused: %r" % text("rope-error"))
        set_value("rope-q", old_q)
        set_value("rope-k", old_k)
        check(text("rope-error") == "" and "score q\u00b7k = " in text("rope-result"),
              "the RoPE dial works again: %r" % text("rope-result"))
        check_rope_dial(driver, text)
        shot("part2")

        # The JS API refuses numbers JSON cannot carry (they would become null, a default).
        for t in ("Infinity", "NaN", "-Infinity"):
            got = driver.execute_script(
                "try { window.page.engine.sample({prompt: 'In', temperature: %s}); return 'no error'; }"
                " catch (e) { return e.name + ': ' + e.message; }" % t)
            check(got == "AttogradError: sample: temperature is %s: give a finite number (JSON, which "
                  "carries requests to the engine, has no Infinity or NaN)" % t,
                  "a temperature of %s is refused by the JS API: %r" % (t, got))

        # Part 5: gradient checks.
        Select(driver.find_element(By.ID, "gc-op")).select_by_visible_text("softmax")
        driver.find_element(By.ID, "gc-go").click()
        table = text("gc-table")
        check("PASS" in table and "FAIL" not in table, "softmax's gradient check passes in the page")
        shot("part5")

        # Part 3: a non-UTF-8 file is refused; then pico trains on the shipped text.
        bad = os.path.join(tempfile.mkdtemp(), "latin1.txt")
        with open(bad, "wb") as f:
            f.write(b"In the beginning \xe9t\xe9\n" * 20)
        driver.find_element(By.ID, "tr-file").send_keys(bad)
        wait().until(lambda d: "latin1.txt" in text("tr-file-name"))
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: text("tr-error") != "")
        check(text("tr-error").startswith("latin1.txt is not UTF-8 text: invalid UTF-8 at byte offset 17"),
              "a non-UTF-8 file is refused: %r" % text("tr-error"))
        # The input is emptied once its file is read, so that the same file, edited and chosen
        # again, is read again (an input fires no change for the file it holds).
        file_input = lambda: driver.execute_script("return document.getElementById('tr-file').value;")
        chosen = text("tr-file-name")
        driver.find_element(By.ID, "tr-file-clear").click()
        genesis = text("tr-file-name")
        with open(bad, "ab") as f:
            f.write(b"and more\n")
        driver.find_element(By.ID, "tr-file").send_keys(bad)
        wait().until(lambda d: "latin1.txt" in text("tr-file-name"))
        check(file_input() == "" and chosen == "training text: latin1.txt (420 bytes)" and
              genesis == "training text: Genesis (shipped with the page)" and
              text("tr-file-name") == "training text: latin1.txt (429 bytes)",
              "a chosen file is read and the input emptied; the same file chosen again is read again: "
              "%r, %r, %r" % (chosen, genesis, text("tr-file-name")))
        empty = os.path.join(os.path.dirname(bad), "empty.txt")
        open(empty, "wb").close()
        driver.find_element(By.ID, "tr-file").send_keys(empty)
        wait().until(lambda d: "empty.txt" in text("tr-file-name"))
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: text("tr-error").startswith("empty.txt"))
        check(text("tr-error") == "empty.txt is empty: choose a file with the text to train on (a few "
              "thousand characters at least), or press \u201cuse the shipped text\u201d to train on Genesis.",
              "an empty file is refused in the page's words: %r" % text("tr-error"))
        driver.find_element(By.ID, "tr-file-clear").click()
        # Sizes beyond the page's maxima are refused before anything is built, naming the maximum.
        Select(driver.find_element(By.ID, "tr-model")).select_by_value("custom")
        too_big = ("a bigger model trains too slowly in the page: train it with the command line "
                   "(attograd train), the same engine built natively.")
        for element_id, typed, want in (
                ("tr-n_embd", "64", "n_embd is 64: this page takes at most 32; " + too_big),
                ("tr-n_layer", "12", "n_layer is 12: this page takes at most 4; " + too_big),
                ("tr-steps", "30000", "steps is 30000: this page takes at most 20000; the pico homework "
                                      "takes 20,000; run a longer training with the command line "
                                      "(attograd train)."),
                ("tr-batch", "2.5", "batch is '2.5': type a whole number from 1 to 256."),
                ("tr-lr", "", "learning rate is empty (or not a number): type a number above 0, e.g. 0.01."),
                ("tr-lr", "0", "learning rate is 0: type a number above 0, e.g. 0.01.")):
            old = driver.find_element(By.ID, element_id).get_attribute("value")
            driver.find_element(By.ID, element_id).clear()
            driver.find_element(By.ID, element_id).send_keys(typed)
            driver.find_element(By.ID, "tr-build").click()
            wait().until(lambda d: text("tr-error") != "" and not text("tr-error").startswith("empty"))
            check(text("tr-error") == want and text("tr-info") == "" and
                  not driver.find_element(By.ID, "tr-start").is_enabled(),
                  "%s %s is refused and nothing is built: %r" % (element_id, typed, text("tr-error")))
            driver.find_element(By.ID, element_id).clear()
            driver.find_element(By.ID, element_id).send_keys(old)
        # A file with a byte order mark and Windows line ends is read as attograd train reads it:
        # the same characters as its LF text ('\r' and the mark are no characters of the model).
        def build_info():
            driver.execute_script("document.getElementById('tr-info').textContent = '';")
            driver.find_element(By.ID, "tr-build").click()
            wait().until(lambda d: (text("tr-info") != "" and not text("tr-info").startswith("Building"))
                         or text("tr-error") != "")
            return text("tr-info")
        Select(driver.find_element(By.ID, "tr-model")).select_by_value("femto")
        with open(os.path.join(WEB_DIR, "genesis.txt"), "rb") as f:
            genesis_bytes = f.read()
        files = {}
        for name, data in (("unix.txt", genesis_bytes),
                           ("windows.txt", b"\xef\xbb\xbf" + genesis_bytes.replace(b"\n", b"\r\n"))):
            files[name] = os.path.join(os.path.dirname(bad), name)
            with open(files[name], "wb") as f:
                f.write(data)
            driver.find_element(By.ID, "tr-file").send_keys(files[name])
            wait().until(lambda d: name in text("tr-file-name"))
            files[name] = build_info()
        lines = genesis_bytes.count(b"\n")
        check(files["unix.txt"].startswith("gpt with") and
              files["windows.txt"] == files["unix.txt"].replace(
                  "val characters.", "val characters (%s Windows or old-Mac line ends read as plain line breaks, "
                  "as attograd train reads a file)." % format(lines, ",")),
              "a file with a BOM and CRLF line ends has its LF text's characters: %r" % files["windows.txt"])
        # Each model's line lists only the settings it has (on the file: the shipped text is
        # fetched at the first Build on it, which the checks below make fail).
        driver.find_element(By.ID, "tr-file").send_keys(os.path.join(os.path.dirname(bad), "unix.txt"))
        wait().until(lambda d: "unix.txt" in text("tr-file-name"))
        for kind, want in (("bigram", r"bigram with [\d,]+ parameters \(V = 70, block_size 8\); "),
                           ("average", r"average with [\d,]+ parameters \(V = 70, block_size 8, n_embd 6\); "),
                           ("femto", r"gpt with [\d,]+ parameters \(V = 70, block_size 8, n_layer 1, n_head 1, "
                                     r"n_embd 2\); ")):
            Select(driver.find_element(By.ID, "tr-model")).select_by_value(kind)
            line = build_info()
            check(re.match(want, line) is not None, "the %s model's line: %r" % (kind, line))
        driver.find_element(By.ID, "tr-file-clear").click()
        Select(driver.find_element(By.ID, "tr-model")).select_by_value("pico")
        # The shipped text cannot be fetched (the server gone, or it answers 404): a message.
        fix = ("Start the page's server again (bash scripts/playground.sh) and reload, or choose a "
               "text file of your own above.")
        for fake, want in (("Promise.reject(new TypeError('Failed to fetch'))",
                            "The shipped text genesis.txt could not be fetched (Failed to fetch): the "
                            "page's server is not answering. " + fix),
                           ("Promise.resolve(new Response('', {status: 404, statusText: 'File not found'}))",
                            "The shipped text genesis.txt could not be fetched: the server answered 404 "
                            "File not found. " + fix)):
            driver.execute_script("window.realFetch = window.fetch; window.fetch = () => %s;" % fake)
            driver.find_element(By.ID, "tr-build").click()
            wait().until(lambda d: text("tr-error") != "")
            driver.execute_script("window.fetch = window.realFetch;")
            check(text("tr-error") == want, "Build without the shipped text says so: %r" % text("tr-error"))
        driver.find_element(By.ID, "tr-steps").clear()
        driver.find_element(By.ID, "tr-steps").send_keys("300")
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: d.find_element(By.ID, "tr-start").is_enabled())
        check(text("tr-error") == "", "pico builds on the shipped text after the refusal")
        unigram = float(re.search(r"unigram ([0-9.]+)", text("tr-info")).group(1))
        driver.find_element(By.ID, "tr-start").click()
        # While the worker trains: for a second, the main thread's tasks are timed (the Long
        # Tasks API reports each over 50 ms; none may reach 400 ms) and its timers' gaps noted,
        # the workbench answers a change of preset while the step count rises, and the steps go
        # on while the main thread is blocked. A gap between timers with no long task in it is
        # the machine's scheduler (a loaded 2-core CI box), not the page's work, so the check is
        # on the tasks; the gap is printed beside them.
        probe = driver.execute_async_script("""
            const done = arguments[0];
            const step = () => window.page.trainingStep();
            let first, start, end, last, worst = 0;
            const long = [];  // the main thread's tasks over 50 ms, as Chromium reports them
            const tasks = new PerformanceObserver((list) => long.push(...list.getEntries()));
            tasks.observe({type: 'longtask'});
            // From the worker's first report (its first chunk), for a second.
            const begin = () => {
              if (step() === 0) return setTimeout(begin, 5);
              first = step();
              start = last = performance.now();
              setTimeout(tick, 5);
            };
            const tick = () => {
              const now = performance.now();
              worst = Math.max(worst, now - last);
              last = now;
              if (now - start < 1000) return setTimeout(tick, 5);
              end = now;
              const before = performance.now();
              const select = document.getElementById('wb-preset');
              select.value = 't3';
              select.dispatchEvent(new Event('change'));
              const rows = document.querySelectorAll('#wb-Z tr').length;
              const answer = performance.now() - before;
              // The proof that the training is not on this thread: block it for 0.7 s; the
              // worker's steps go on meanwhile, and its reports arrive after.
              const blocked = step(), until = performance.now() + 700;
              while (performance.now() < until) {}
              setTimeout(() => {
                long.push(...tasks.takeRecords());
                tasks.disconnect();
                // The tasks that ran within the second (this one, which blocks, ends after it).
                const longest = Math.max(0, ...long.filter((e) =>
                    e.startTime >= start && e.startTime + e.duration <= end).map((e) => e.duration));
                // And the block itself, seen: the proof that this timer sees a long task.
                const block = Math.max(0, ...long.filter((e) => e.startTime + e.duration > end)
                    .map((e) => e.duration));
                done({first, last: step(), worst, longest, block, rows, answer, blocked,
                      after_block: step()});
              }, 100);
            };
            begin();""")
        check(probe["block"] >= 700, "the Long Tasks API times the main thread: it saw the 0.7 s "
              "block as a task of %.0f ms" % probe["block"])
        check(probe["last"] > probe["first"] and probe["longest"] < 400 and probe["rows"] == 3,
              "the page answers while training runs: steps %d -> %d, longest main-thread task %.0f ms "
              "(0: none over 50 ms), longest gap between timers %.0f ms, workbench answered in %.0f ms"
              % (probe["first"], probe["last"], probe["longest"], probe["worst"], probe["answer"]))
        check(probe["after_block"] >= probe["blocked"] + 20 or probe["after_block"] == 300,
              "the worker trains while the page's thread is blocked: step %d -> %d" %
              (probe["blocked"], probe["after_block"]))
        Select(driver.find_element(By.ID, "wb-preset")).select_by_value("lecture")
        wait(300).until(lambda d: "done" in text("tr-progress"))
        progress = text("tr-progress")
        val = float(re.search(r"val loss ([0-9.]+)", progress).group(1))
        check("step 300 / 300" in progress, "pico trained 300 steps: %r" % progress)
        check(val < unigram, "pico's val loss %.4f is below the unigram baseline %.4f" % (val, unigram))
        check_chart(driver)
        # Train again at the end of the run, then with fewer steps: the page says what to do.
        for steps in ("300", "150"):
            driver.find_element(By.ID, "tr-steps").clear()
            driver.find_element(By.ID, "tr-steps").send_keys(steps)
            driver.find_element(By.ID, "tr-start").click()
            wait().until(lambda d: text("tr-error") != "")
            want = ("This model has trained 300 steps, and Steps is %s: the run has reached its step "
                    "count. To go on training it, raise Steps above 300 and press Train (its learning "
                    "rate stays at the floor its cosine decay reached, as attograd train --resume with a "
                    "larger --steps does); Build starts a new model." % steps)
            check(text("tr-error") == want and driver.find_element(By.ID, "tr-start").is_enabled() and
                  not driver.find_element(By.ID, "tr-pause").is_enabled(),
                  "Train with Steps %s after 300 steps says how to go on: %r" % (steps, text("tr-error")))
        # A later action of part 3 that succeeds (a sample) clears the refusal.
        driver.find_element(By.ID, "sm-go").click()
        wait().until(lambda d: d.find_element(By.ID, "sm-go").is_enabled() and
                     len(d.find_elements(By.CSS_SELECTOR, "#sm-text .tok")) > 0)
        check(text("tr-error") == "" and text("sm-error") == "",
              "a sample after the refusal clears it: %r" % text("tr-error"))
        driver.find_element(By.ID, "tr-steps").clear()
        driver.find_element(By.ID, "tr-steps").send_keys("320")
        driver.find_element(By.ID, "tr-start").click()
        wait(300).until(lambda d: "step 320 / 320" in text("tr-progress") and "done" in text("tr-progress"))
        check(text("tr-error") == "", "raising Steps to 320 trains on: %r" % text("tr-progress"))

        # Sampling with the sliders: the text token by token, the bars of every step.
        check_sampling(driver, wait, text, int(re.search(r"V = (\d+)", text("tr-info")).group(1)))
        shot("part3")

        # Part 4: the pico trained here, its maps marked; a prompt longer than the context
        # (pico: block_size 8), then the native CLI's checkpoint and its attention maps.
        prompt = driver.find_element(By.ID, "li-prompt")
        prompt.clear()
        prompt.send_keys("In the")
        driver.find_element(By.ID, "li-go").click()
        wait().until(lambda d: text("li-summary") != "")
        check_attribution(driver, "the pico trained in the page", "In the", 4 * 9)
        headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#li-maps table.heat tr:first-child th")][:7]
        check(headers == ["", "I", "n", "\u00b7", "t", "h", "e"], "a space's header shows \u00b7: %s" % headers)
        prompt.clear()
        prompt.send_keys("In")
        driver.find_element(By.ID, "li-go").click()
        wait().until(lambda d: "No outlines" in text("li-summary"))
        check("at least 3" in text("li-summary") and not driver.find_elements(By.CSS_SELECTOR, "#li-maps .dot"),
              "a 2-token prompt: maps without marks, and the reason: %r" % text("li-summary"))
        prompt.clear()
        prompt.send_keys("In the beginning")
        driver.find_element(By.ID, "li-go").click()
        wait().until(lambda d: text("li-error") != "")
        check("longer than this model's context (block_size 8)" in text("li-error"),
              "a prompt longer than the context is refused: %r" % text("li-error"))
        check(not driver.find_elements(By.CSS_SELECTOR, "#li-maps table") and text("li-summary") == "" and
              not driver.find_element(By.ID, "li-legend").is_displayed(),
              "the refusal clears the last prompt's maps, legend and summary")
        prompt.clear()
        prompt.send_keys("In th@")
        driver.find_element(By.ID, "li-go").click()
        wait().until(lambda d: text("li-error").startswith("character"))
        check(text("li-error") == "character 6 of the prompt, '@' (U+0040), is not in this model's text: a "
              "character model knows only the characters of the text it was trained on. Remove it from the "
              "prompt", "a character the text lacks is named in the page's words: %r" % text("li-error"))
        # The checkpoint is loaded while the pico trains on: the run ends with the model it
        # trained, its progress line goes, and neither Train nor Pause is offered (a checkpoint
        # has no text to train on).
        driver.find_element(By.ID, "tr-steps").clear()
        driver.find_element(By.ID, "tr-steps").send_keys("5000")
        driver.find_element(By.ID, "tr-start").click()
        wait().until(lambda d: d.execute_script("return window.page.trainingStep();") > 320)
        driver.find_element(By.ID, "tr-load").send_keys(
            os.path.join(FIXTURE_DIR, "run", "ckpt.safetensors"))
        wait().until(lambda d: "loaded ckpt.safetensors" in text("tr-info") or text("tr-error") != "")
        check(text("tr-error") == "", "the native CLI's checkpoint loads: %r" % text("tr-info"))
        time.sleep(0.5)  # a report of the old run would arrive by now
        check(text("tr-progress") == "" and driver.execute_script("return window.page.trainingStep();") == 0
              and not driver.find_element(By.ID, "tr-start").is_enabled()
              and not driver.find_element(By.ID, "tr-pause").is_enabled(),
              "loading during training clears the progress line and disables Train and Pause: %r"
              % text("tr-progress"))
        with open(os.path.join(FIXTURE_DIR, "prompt.txt"), encoding="utf-8") as f:
            fixture_prompt = f.read()
        prompt.clear()
        prompt.send_keys(fixture_prompt)
        driver.find_element(By.ID, "li-go").click()
        T = len(fixture_prompt)
        # The maps of the short prompts above are replaced by 9 of T + 1 rows (a header, T queries).
        wait().until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#li-maps table.heat")) == 9 and
                     len(d.find_elements(By.CSS_SELECTOR, "#li-maps table.heat tr")) == 9 * (T + 1))
        maps = driver.execute_script("""
            return [...document.querySelectorAll('#li-maps .map')].map((m) => ({
              title: m.querySelector('h4').textContent,
              rows: [...m.querySelectorAll('table.heat tr')].slice(1).map((tr) =>
                  [...tr.querySelectorAll('td')].map((td) => +td.dataset.w))}));""")
        worst, sums_ok, zeros_ok = 0.0, True, True
        for m in maps:
            l, h = map(int, re.match(r"layer (\d+), head (\d+)", m["title"]).groups())
            csv = read_csv(os.path.join(FIXTURE_DIR, "attention", "layer%d_head%d.csv" % (l, h)), T)
            for qi, row in enumerate(m["rows"]):
                sums_ok &= abs(sum(row) - 1) < 1e-6
                zeros_ok &= all(w == 0 for w in row[qi + 1:])
                worst = max([worst] + [abs(a - b) for a, b in zip(row, csv[qi])])
        check(len(maps) == 9 and all(len(m["rows"]) == T for m in maps),
              "9 maps (3 layers x 3 heads) of %d x %d" % (T, T))
        check(sums_ok and zeros_ok, "every row sums to 1 with zeros above the diagonal")
        check(worst <= 1e-5, "the maps equal attograd attention's CSV (largest difference %.1e)" % worst)
        with open(os.path.join(FIXTURE_DIR, "attention", "attribution.csv"), encoding="utf-8") as f:
            cli_rows = [line.split(",") for line in f.read().strip().split("\n")[1:]]
        differ, total = check_attribution(driver, "the native CLI's checkpoint", fixture_prompt,
                                          (T - 2) * 9, cli_rows)
        print("attribution on the checkpoint: %d of %d differ" % (differ, total), flush=True)
        # The link to the chapter's section: the chapter is served with the page.
        href = driver.find_element(By.ID, "li-docs").get_attribute("href")
        path = urllib.parse.urlparse(href).path.lstrip("/")
        with urllib.request.urlopen(base + path) as reply:
            chapter = reply.read().decode("utf-8")
        # (the chapter's copy beside the page, build-wasm/page/docs/03-attention.txt)
        check(href == base + path and path.split("/") == ["docs", "03-attention.txt"] and "\n## Attention is not explanation\n" in chapter and
              "section \u201cAttention is not explanation\u201d" in text("part4"),
              "the link %s is served and holds the section the page names" % href)
        shot("part4")

        # A truncated checkpoint is refused; the loaded model still answers.
        with open(os.path.join(FIXTURE_DIR, "run", "ckpt.safetensors"), "rb") as f:
            ckpt = f.read()
        truncated = os.path.join(tempfile.mkdtemp(), "truncated.safetensors")
        with open(truncated, "wb") as f:
            f.write(ckpt[: len(ckpt) // 2])
        driver.find_element(By.ID, "tr-load").send_keys(truncated)
        wait().until(lambda d: text("tr-error") != "")
        check(text("tr-error").startswith("safetensors file 'truncated.safetensors': truncated"),
              "a truncated checkpoint is refused: %r" % text("tr-error"))
        # The same file chosen again is read again (the input was emptied after reading it).
        refused = text("tr-error")
        load_value = driver.execute_script("return document.getElementById('tr-load').value;")
        driver.execute_script("document.getElementById('tr-error').textContent = '';")
        driver.find_element(By.ID, "tr-load").send_keys(truncated)
        wait().until(lambda d: text("tr-error") != "")
        check(load_value == "" and text("tr-error") == refused,
              "the checkpoint input is emptied after reading (%r), and the same file chosen again is "
              "read again" % load_value)
        driver.find_element(By.ID, "sm-go").click()
        wait().until(lambda d: d.find_element(By.ID, "sm-go").is_enabled() and
                     len(d.find_elements(By.CSS_SELECTOR, "#sm-text .tok")) == 40)
        check(text("sm-text").startswith("And God said") and text("sm-error") == "",
              "sampling works after the refusal")

        # Build during training: the old run ends, Pause goes, Train starts the new model at 0.
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: d.find_element(By.ID, "tr-start").is_enabled())
        driver.find_element(By.ID, "tr-start").click()
        wait().until(lambda d: d.execute_script("return window.page.trainingStep();") > 0)
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: d.find_element(By.ID, "tr-start").is_enabled())
        time.sleep(0.5)
        check(text("tr-progress") == "" and text("tr-error") == "" and
              not driver.find_element(By.ID, "tr-pause").is_enabled(),
              "Build during training clears the progress line and disables Pause: %r" % text("tr-progress"))
        driver.find_element(By.ID, "tr-start").click()
        wait().until(lambda d: text("tr-progress").startswith("step "))
        step = int(re.match(r"step (\d+) / 5000", text("tr-progress")).group(1))
        driver.find_element(By.ID, "tr-pause").click()
        wait().until(lambda d: d.find_element(By.ID, "tr-start").is_enabled())
        check(step < 1000 and text("tr-error") == "" and
              not driver.find_element(By.ID, "tr-pause").is_enabled(),
              "the new model trains from step 0 (step %d at its first report) and pauses" % step)

        # A setting changed since Build is not trained silently: Train names it. Build takes it,
        # and the old model's attention maps and sampling step line go with the old model.
        prompt = driver.find_element(By.ID, "li-prompt")
        prompt.clear()
        prompt.send_keys("In the")
        driver.find_element(By.ID, "li-go").click()
        wait().until(lambda d: d.find_elements(By.CSS_SELECTOR, "#li-maps table.heat"))
        built_model = driver.find_element(By.ID, "tr-model").get_attribute("value")
        Select(driver.find_element(By.ID, "tr-model")).select_by_value("bigram")
        driver.find_element(By.ID, "tr-start").click()
        wait().until(lambda d: text("tr-error") != "")
        check(re.match(r"The settings changed since Build \(text Genesis, model %s, .* then; "
                       r"text Genesis, model bigram, .* now\): press Build" % built_model, text("tr-error")),
              "Train after the model was changed names the change: %r" % text("tr-error"))
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: text("tr-info").startswith("bigram"))
        check(text("tr-error") == "" and text("li-summary") == "" and text("sm-step") == "" and
              not driver.find_elements(By.CSS_SELECTOR, "#li-maps table"),
              "Build clears the old model's maps, comparison and sampling step line")
        Select(driver.find_element(By.ID, "tr-model")).select_by_value(built_model)
        # Before the first Train, Steps counts too (Build set the schedule's warmup and decay by
        # it); a number written otherwise ("0.010" for 0.01) is no change.
        driver.find_element(By.ID, "tr-build").click()
        wait().until(lambda d: text("tr-info").startswith("gpt"))
        driver.find_element(By.ID, "tr-steps").clear()
        driver.find_element(By.ID, "tr-steps").send_keys("5001")
        lr = driver.find_element(By.ID, "tr-lr").get_attribute("value")
        driver.find_element(By.ID, "tr-lr").clear()
        driver.find_element(By.ID, "tr-lr").send_keys(lr + "0")
        driver.find_element(By.ID, "tr-start").click()
        wait().until(lambda d: text("tr-error") != "")
        check(re.search(r"steps 5000, .* then; .*steps 5001, .* now\)", text("tr-error")) and
              "learning rate %s" % lr in text("tr-error"),
              "Steps changed before the first Train is named, the learning rate written %s0 is not: %r"
              % (lr, text("tr-error")))
        driver.find_element(By.ID, "tr-steps").clear()
        driver.find_element(By.ID, "tr-steps").send_keys("5000")

        check_homework(driver, wait, text)
        check_divergence_and_plateau(driver, wait, text)
        check_phone_width(driver)

        # Nothing but the page's own files was fetched.
        entries = driver.execute_script(
            "return performance.getEntriesByType('resource').map((e) => e.name)"
            ".concat(performance.getEntriesByType('navigation').map((e) => e.name));")
        outside = [e for e in entries if not e.startswith(base)]
        check(outside == [], "the browser fetched only from the page's server: %s" % outside)
        paths = sorted(set(r.split("?")[0].lstrip("/") for r in requests))
        check(all(os.path.isfile(os.path.join(WEB_DIR, p)) for p in paths),
              "the server was asked only for its own files: %s" % paths)
        logs = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        check(logs == [], "the console shows no error: %s" % logs)
        check_file_page(driver, WEB_DIR)
    finally:
        driver.quit()
        server.shutdown()

    for part in ("part1", "part2", "part3", "part4", "part5"):
        path = os.path.join(OUT_DIR, part + ".png")
        with open(path, "rb") as f:
            check(png_has_content(f.read()), "the screenshot %s is not blank" % path)
    print("%d passed, %d failed" % (len(passed), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
