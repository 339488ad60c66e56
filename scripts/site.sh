#!/usr/bin/env bash
# The companion site: the chapters of docs/ rendered by Debian's mkdocs and mkdocs-material
# (mkdocs.yml), with their figures, search, and the companion page (the WebAssembly playground)
# at playground/, in one folder of static files, build-site/. Each chapter's link to "part N"
# of the page opens that part of playground/index.html (scripts/mkdocs_hooks.py rewrites the
# repository's ../web/index.html#partN; the Markdown stays readable in the repository).
#   bash scripts/site.sh               install what is missing, build the page if it is missing
#                                      or stale (scripts/wasm.sh --no-test), then the site
#   bash scripts/site.sh --page-built  the site only, from build-wasm/page as it is (what
#                                      scripts/wasm.sh runs, right after building the page)
# Then serve it, `python3 -m http.server -d build-site` (http://127.0.0.1:8000/), or copy the
# folder to any static host. The site fetches nothing from elsewhere and works offline.
# mkdocs builds it in about 2 s; tests/web/site_test.py checks it in the browser (CTest's
# site_test in build-wasm, run by scripts/wasm.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  "") page=1 ;;
  --page-built) page=0 ;;
  *)
    echo "site.sh: unknown option '$1': give none, or --page-built" >&2
    exit 2
    ;;
esac
bash scripts/install-deps.sh --site
# The page is a build like any other: ninja rebuilds what is stale and does nothing when the
# page is current (a few seconds of configure), so no date comparison of our own is needed.
[ $page = 0 ] || bash scripts/wasm.sh --no-test
start=$SECONDS
# Debian's python3, which has Debian's mkdocs (a python3 earlier on PATH, pyenv's, may not).
/usr/bin/python3 -m mkdocs build --strict --clean
echo "attograd site: build-site/ in $((SECONDS - start)) s; serve it with" \
  "python3 -m http.server -d build-site, then open http://127.0.0.1:8000/"
