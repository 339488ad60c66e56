#!/usr/bin/python3
"""The companion site (scripts/site.sh, build-site/) in a real browser: CTest test `site_test` of
the wasm build (label `browser`). Debian's headless Chromium, driven by chromedriver through
python3-selenium, opens every page of the site from a loopback server started here, and checks
what a student would meet:

  - every page (each .html file of the site: the chapters, the reference pages, the pages the
    chapters link to outside docs/, the playground) loads with no error in the console, and fetches
    nothing from another host (the site works offline);
  - every link and figure on every page (<a href>, <img src>, and the scripts and stylesheets)
    that points into the site answers 200 from the server, and where a link has a #fragment, the
    page it names has an element with that id;
  - every link of a chapter to "part N" of the companion page, clicked, opens the playground with
    the hash #partN, its section partN exists and is in view once the engine is ready;
  - no page tells its reader to build the playground (the chapters' "bash scripts/playground.sh,
    then http://127.0.0.1:8000/#partN" hint is for the repository: the hooks drop it);
  - the search box finds a word of the chapters.

When the site is not built the test is skipped (exit code 77): bash scripts/site.sh builds it.
  /usr/bin/python3 tests/web/site_test.py build-site
"""
import html.parser
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from browser_tools import check, failures, passed, serve, start_browser

SITE_DIR = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build-site")
SKIP = 77  # CTest's SKIP_RETURN_CODE for this test (tests/wasm/CMakeLists.txt)

class Ids(html.parser.HTMLParser):
    """The ids (and a's names) of an HTML file: the targets a #fragment may name."""

    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)


def site_pages():
    """Every HTML file of the site, as paths relative to it."""
    pages = []
    for folder, _, names in os.walk(SITE_DIR):
        pages += [os.path.relpath(os.path.join(folder, n), SITE_DIR) for n in names
                  if n.endswith(".html")]
    return sorted(p.replace(os.sep, "/") for p in pages)


def wait_until_loaded(driver, is_playground):
    """The document loaded, and on the playground the engine started (its errors come then)."""
    for _ in range(600):
        if driver.execute_script("return document.readyState") == "complete":
            break
        time.sleep(0.05)
    if is_playground:
        driver.execute_async_script(
            "const done = arguments[0];"
            "window.page.ready.then(() => done(true), (e) => done(String(e)));")


def main():
    if not os.path.isfile(os.path.join(SITE_DIR, "index.html")):
        print("site_test: skipped: no site in %s (bash scripts/site.sh builds it)" % SITE_DIR)
        return SKIP
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server, base = serve(SITE_DIR)
    status = {}  # a URL of the site without its fragment -> HTTP status
    ids = {}  # a page of the site -> its ids

    def fetch(url):
        if url not in status:
            try:
                with urllib.request.urlopen(url) as reply:
                    status[url], body = reply.status, reply.read()
                if url.endswith(".html") or url.endswith("/"):
                    parser = Ids()
                    parser.feed(body.decode("utf-8"))
                    ids[url] = parser.ids
            except urllib.error.HTTPError as e:
                status[url] = e.code
        return status[url]

    pages = site_pages()
    chapters = [p for p in pages if p[:2].isdigit()]
    check(len(chapters) >= 5 and "playground/index.html" in pages,
          "the site has %d pages: %d chapters and the playground" % (len(pages), len(chapters)))
    started = time.time()
    driver = start_browser("1200,900")
    part_links = []  # (page, href) of each link to a part of the playground
    try:
        for page in pages:
            driver.get(base + page)
            playground = page.startswith("playground/")
            wait_until_loaded(driver, playground)
            errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            check(errors == [], "%s loads with no console error %s" % (page, errors[:3]))
            found = driver.execute_script("""
                const urls = (sel, attr) => [...document.querySelectorAll(sel)].map((e) => e[attr]);
                return {links: urls('a[href]', 'href'), images: urls('img[src]', 'src'),
                        assets: urls('script[src]', 'src').concat(urls('link[href]', 'href')),
                        fetched: performance.getEntriesByType('resource').map((e) => e.name)};""")
            # The repository's "bash scripts/playground.sh, then ..." hint is not on the site,
            # whose links open the playground themselves (scripts/mkdocs_hooks.py drops it).
            hint = driver.execute_script(
                "return document.body.innerText.includes('scripts/playground.sh');")
            check(not hint, "%s does not tell a reader of the site to build the playground" % page)
            outside = [u for u in found["fetched"] if not u.startswith(base)]
            check(outside == [], "%s fetches nothing from another host %s" % (page, outside[:3]))
            broken = []
            urls = found["links"] + found["images"] + found["assets"]
            for url in urls:
                if not url.startswith(base):
                    continue  # another site (a paper, Highway's repository): not this test's
                target, _, fragment = url.partition("#")
                if fetch(target) != 200:
                    broken.append("%s (%d)" % (url[len(base):], status[target]))
                elif fragment and urllib.parse.unquote(fragment) not in ids.get(target, set()):
                    broken.append("%s (no id %r)" % (url[len(base):], fragment))
                if target == base + "playground/index.html" and fragment and not playground:
                    part_links.append((page, url))
            check(broken == [], "%s: its %d links and figures resolve %s"
                  % (page, len([u for u in urls if u.startswith(base)]), broken[:5]))
        check(all(any(p == c for p, _ in part_links) for c in chapters[:5]),
              "each chapter links to the playground (%d links)" % len(part_links))

        # Each chapter's link to a part, clicked as a student would.
        for page, url in part_links:
            part = url.partition("#")[2]
            driver.get(base + page)
            wait_until_loaded(driver, False)
            link = driver.find_element(By.CSS_SELECTOR,
                                       'a[href$="#%s"][href*="playground/"]' % part)
            driver.execute_script("arguments[0].click();", link)
            WebDriverWait(driver, 30).until(lambda d: "playground/" in d.current_url)
            wait_until_loaded(driver, True)
            where = driver.execute_script("""
                const e = document.getElementById(location.hash.slice(1));
                return {path: location.pathname, hash: location.hash,
                        top: e ? Math.round(e.getBoundingClientRect().top) : null,
                        height: innerHeight, at_end: scrollY + innerHeight >=
                                                     document.documentElement.scrollHeight - 2};""")
            # At the top of the window, where the page puts it once its parts are drawn (a part
            # followed before is pushed down as the parts above it fill), or, for parts 4 and 5,
            # too near the end to reach the top, in view with the page scrolled to its end.
            check(where["path"] == "/playground/index.html" and where["hash"] == "#" + part and
                  where["top"] is not None and (abs(where["top"]) <= 2 or (
                      where["at_end"] and 0 <= where["top"] < where["height"])),
                  "%s's link to %s opens the playground there: %s" % (page, part, where))

        # Search, offline: the theme's worker indexes search/search_index.json.
        driver.get(base + "index.html")
        wait_until_loaded(driver, False)
        box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
        driver.execute_script("arguments[0].focus();", box)
        box.send_keys("softmax")
        WebDriverWait(driver, 30).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
        hits = driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")
        check(any("02-kernels.html" in h.get_attribute("href") for h in hits),
              "search finds 'softmax' in chapter 2 (%d results)" % len(hits))
    finally:
        driver.quit()
        server.shutdown()
    print("%d passed, %d failed in %.1f s" % (len(passed), len(failures), time.time() - started))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
