#!/usr/bin/python3
"""The site's 404 page under a path (mkdocs.yml's site_url, from ATTOGRAD_SITE_URL): CTest test
`site_url_test` of the wasm build. A server answers a missing page with 404.html whatever the
depth of the address asked for, so its links cannot be relative: they start at the site's path.
Built here twice into temporary folders with Debian's mkdocs (about 2 s each):

  - without ATTOGRAD_SITE_URL every link and asset of 404.html starts at the server's root "/"
    (a site served from a domain's root, as scripts/site.sh builds it by default);
  - with ATTOGRAD_SITE_URL=http://127.0.0.1:8000/course/ every one starts at /course/, and the
    page it names exists in the built site (so the 404 page of a site published under a path
    leads back into it).

Skipped (exit code 77) when the playground is not built (build-wasm/page: scripts/wasm.sh), which
the site's hooks copy in.
  /usr/bin/python3 tests/web/site_url_test.py
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build(site_dir, site_url):
    env = dict(os.environ)
    env.pop("ATTOGRAD_SITE_URL", None)
    if site_url:
        env["ATTOGRAD_SITE_URL"] = site_url
    subprocess.run(["/usr/bin/python3", "-m", "mkdocs", "build", "--strict", "--quiet",
                    "--site-dir", site_dir], cwd=ROOT, env=env, check=True)
    with open(os.path.join(site_dir, "404.html"), encoding="utf-8") as f:
        # Every address it fetches or links to but those within the page (href="#") and on
        # other hosts.
        return [u for u in re.findall(r'(?:href|src)="([^"]+)"', f.read())
                if not u.startswith("#") and "://" not in u]


def main():
    if not os.path.isfile(os.path.join(ROOT, "build-wasm", "page", "index.html")):
        print("skipped: the playground is not built (bash scripts/wasm.sh)")
        return 77
    failures = 0

    def check(ok, what):
        nonlocal failures
        print("%s  %s" % ("ok  " if ok else "FAIL", what))
        failures += not ok

    with tempfile.TemporaryDirectory() as tmp:
        links = build(os.path.join(tmp, "root"), None)
        check(len(links) >= 5 and all(u.startswith("/") and not u.startswith("/course/")
                                      for u in links),
              "without a site_url the 404 page's %d links start at /: %s" % (len(links), links[:3]))
        site = os.path.join(tmp, "course")
        links = build(site, "http://127.0.0.1:8000/course/")
        bad = [u for u in links if not u.startswith("/course/")]
        check(len(links) >= 5 and not bad,
              "with ATTOGRAD_SITE_URL=.../course/ its %d links start at /course/ %s"
              % (len(links), bad[:3]))
        missing = [u for u in links if u.startswith("/course/") and
                   not os.path.exists(os.path.join(site, u[len("/course/"):].partition("#")[0]))]
        check(not missing, "every page and asset they name is in the built site %s" % missing[:3])
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
