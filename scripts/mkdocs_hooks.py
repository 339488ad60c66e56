"""The site's mkdocs hooks (mkdocs.yml `hooks:`; scripts/site.sh builds the site with them).

The chapters are written to be read in the repository, where a link goes to a file of the tree:
`../web/index.html#part3` (the page's source), `../bench/README.md`. On the site those files are
elsewhere or absent, so the build rewrites each such link to where the site has the file, and
leaves the Markdown as it is (a link that works in the repository keeps working there):

  - the companion page is served from build-wasm/page/ (scripts/wasm.sh builds it from web/),
    and the site holds a copy at playground/: `../web/X` becomes `playground/X`, relative to the
    page that links;
  - a Markdown file outside docs/ that a chapter links to (bench/README.md, tests/fuzz/README.md)
    becomes a page of the site under its path in the tree (build-site/bench/index.html), so the
    link has somewhere to go; its own links are mapped by the same rule;
  - a chapter's hint for a reader of the repository, "(`bash scripts/playground.sh`, then
    http://127.0.0.1:8000/#partN)" after its link to the page, is dropped: on the site the link
    itself opens the playground, and the hint would send a student to build it;
  - `<details>` (the exercises' folded answers) gets `markdown="1"`, since Python-Markdown, unlike
    GitHub, renders no Markdown inside raw HTML without it (md_in_html);
  - the other way, the playground's part 4 links to chapter 3 as plain text beside the page
    (web/index.html: nothing renders Markdown there); on the site it links to the chapter's page,
    and the playground's header links back to the chapters.

Anything else a link names outside the site stays as written, and mkdocs --strict stops on it.
ATTOGRAD_PAGE_DIR names another build of the page (default: build-wasm/page beside mkdocs.yml).
"""
import os
import posixpath
import re

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

# A Markdown link's target: ](target) or ](target "title"); targets with spaces (C++ lambdas in
# code, `[](const Tensor& x)`) never match.
LINK = re.compile(r'\]\((?P<target>[^)\s#]*)(?P<fragment>#[^)\s]*)?(?P<title>\s+"[^"]*")?\)')
PLAYGROUND = "playground"
# The repository's hint after a link to a part of the page (see the top of this file).
LOCAL_HINT = re.compile(r' \(`bash scripts/playground\.sh`, then http://127\.0\.0\.1:8000/#part\d\)')

_repo = None  # the repository's root (mkdocs.yml's folder)
_page = None  # the built page (build-wasm/page)
_docs = None  # docs_dir
_outside = {}  # a Markdown file outside docs/ that a page links to: its path in the tree -> File


def _page_dir(config):
    """The built page the site copies: ATTOGRAD_PAGE_DIR, or build-wasm/page."""
    return os.path.abspath(os.environ.get("ATTOGRAD_PAGE_DIR") or
                           os.path.join(os.path.dirname(config["config_file_path"]),
                                        "build-wasm", "page"))


def _site_path(target_abs):
    """Where the site holds the file at target_abs (an absolute path in the tree), as a path
    relative to docs_dir; None when the site has no copy of it."""
    rel_docs = os.path.relpath(target_abs, _docs)
    if not rel_docs.startswith(os.pardir):
        return rel_docs.replace(os.sep, "/")
    rel_repo = os.path.relpath(target_abs, _repo).replace(os.sep, "/")
    if rel_repo.startswith("web/"):  # a file of the page's source: its copy in the built page
        page_file = rel_repo[len("web/"):]
        if os.path.isfile(os.path.join(_page, page_file)):
            return PLAYGROUND + "/" + page_file
    if rel_repo in _outside:
        return rel_repo
    return None


def _linked_outside(path):
    """The Markdown files outside docs/ that the Markdown file at path links to."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = set()
    for m in LINK.finditer(text):
        target = m.group("target")
        if not target.endswith(".md") or "://" in target:
            continue
        abs_target = os.path.normpath(os.path.join(os.path.dirname(path), target))
        rel_docs = os.path.relpath(abs_target, _docs)
        rel_repo = os.path.relpath(abs_target, _repo)
        if (rel_docs.startswith(os.pardir) and not rel_repo.startswith(os.pardir) and
                os.path.isfile(abs_target)):
            found.add(rel_repo.replace(os.sep, "/"))
    return found


def on_files(files, config):
    """Adds the playground (every file of the built page) and the Markdown files outside docs/
    that the chapters link to."""
    global _repo, _docs, _page
    _repo = os.path.dirname(os.path.abspath(config["config_file_path"]))
    _docs = os.path.abspath(config["docs_dir"])
    page_dir = _page = _page_dir(config)
    if not os.path.isfile(os.path.join(page_dir, "index.html")):
        raise PluginError("the playground is not built: %s/index.html is missing. "
                          "bash scripts/site.sh builds it first (bash scripts/wasm.sh --no-test)"
                          % page_dir)
    for folder, _, names in os.walk(page_dir):
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(folder, name), page_dir).replace(os.sep, "/")
            # src_path playground/...: mkdocs copies it there and resolves links to it.
            f = File(PLAYGROUND + "/" + rel, os.path.dirname(page_dir), config["site_dir"],
                     config["use_directory_urls"])
            f.abs_src_path = os.path.join(folder, name)
            files.append(f)
    _outside.clear()
    for f in list(files):
        if f.is_documentation_page() and not f.src_path.startswith(PLAYGROUND + "/"):
            for rel in sorted(_linked_outside(f.abs_src_path)):
                if rel in files:
                    raise PluginError("%s is both in docs/ and outside it" % rel)
                if rel not in _outside:
                    _outside[rel] = File(rel, _repo, config["site_dir"],
                                         config["use_directory_urls"])
                    files.append(_outside[rel])
    return files


def on_page_markdown(markdown, page, config, files):
    """Points each link to a file of the tree at the site's copy of it, relative to this page."""
    here = os.path.dirname(page.file.abs_src_path)
    page_dir = posixpath.dirname(page.file.src_path)

    def rewrite(m):
        target = m.group("target")
        if not target or "://" in target or target.startswith(("/", "mailto:")):
            return m.group(0)
        site = _site_path(os.path.normpath(os.path.join(here, target)))
        if site is None:
            return m.group(0)  # not on the site: mkdocs --strict names it
        new = posixpath.relpath(site, page_dir or ".")
        return "](%s%s%s)" % (new, m.group("fragment") or "", m.group("title") or "")

    markdown = LINK.sub(rewrite, markdown)
    markdown = LOCAL_HINT.sub("", markdown)
    return re.sub(r"<details>", '<details markdown="1">', markdown)


# What the playground's index.html (web/index.html) says on the site, in place of what it says
# served alone: each a pattern of the page's text, and its replacement.
ON_THE_SITE = [
    # Part 4's link to chapter 3 as plain text: to the chapter's page instead.
    (r'<a id="li-docs" href="docs/03-attention\.txt">the chapter as plain text</a>, served with '
     r'this\s+page: find the section by its title\)',
     '<a id="li-docs" href="../03-attention.html#attention-is-not-explanation">'
     'the section on this site</a>)'),
    # The header's list of parts ends with a way back to the chapters.
    (r'(<a href="#part5">5 Gradients</a>)(</nav>)',
     r'\1 · <a id="site-chapters" href="../index.html">the chapters</a>\2'),
]


def on_post_build(config):
    """Says on the playground what it says on the site (site_test checks the links it makes), and
    removes the sitemap."""
    index = os.path.join(config["site_dir"], PLAYGROUND, "index.html")
    with open(index, encoding="utf-8") as f:
        html = f.read()
    for pattern, replacement in ON_THE_SITE:
        html, found = re.subn(pattern, replacement, html)
        if found != 1:
            raise PluginError("web/index.html no longer holds %r: update ON_THE_SITE in "
                              "scripts/mkdocs_hooks.py" % pattern)
    with open(index, "w", encoding="utf-8") as f:
        f.write(html)
    _remove_sitemap(config)


def _remove_sitemap(config):
    """Removes the sitemap: it lists each page's absolute address, which a site meant for any
    host (or none) does not have (mkdocs writes `None` for each without site_url)."""
    for name in ("sitemap.xml", "sitemap.xml.gz"):
        path = os.path.join(config["site_dir"], name)
        if os.path.exists(path):
            os.remove(path)
