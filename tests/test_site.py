"""The book's website (`make site`): built from the committed notebooks and read in a real browser.

The site is built into a temporary folder, served on 127.0.0.1 and opened page by page in headless
Chromium (Debian's `chromium` with its matching `chromium-driver`, driven by Selenium). Every request
to another host is sent to a dead proxy and reported, so a page that needs the internet fails here as
it would for a reader offline. Each page must load with no console error, render every equation
(no raw `$...$` left), load every figure and show no `assert` line of the chapters' test harness;
every link between pages must resolve. A screenshot of each page's top is kept in build/site-screenshots/.

Without Chromium, chromedriver or the site's packages these tests skip, saying what to install;
in CI (CI set) or with MLM_SITE_TEST=1 they fail instead.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import threading
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag

import pytest

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / "build" / "site-screenshots"
INSTALL_BROWSER = ("apt-get install chromium chromium-driver (Debian/Ubuntu, as root), or set CHROMIUM and "
                   "CHROMEDRIVER to a Chromium and its matching chromedriver")
INSTALL_PACKAGES = "pip install -e '.[site]'   (make install-site)"

spec = importlib.util.spec_from_file_location("site_build", REPO / "site" / "build.py")
site_build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(site_build)

PAGES = (["index.html", "exercises/index.html"]
         + [f"chapters/{nb.stem}.html" for nb in site_build.chapters()]
         + [f"reports/{nb.stem}.html" for nb in site_build.reports()]
         + [f"exercises/{t.stem}.html" for t in site_build.assignments()])
CHAPTER_PAGES = [page for page in PAGES if page.startswith("chapters/")]
REPORT_PAGES = [page for page in PAGES if page.startswith("reports/")]


def require(ok: bool, missing: str, install: str) -> None:
    """Skip when something the site test needs is missing, or fail where the test must run (CI)."""
    if ok:
        return
    message = f"{missing} is missing: {install}"
    if os.environ.get("CI") or os.environ.get("MLM_SITE_TEST") == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def require_site_packages() -> None:
    for package in ("sphinx", "myst_nb", "sphinx_book_theme", "mathjax", "selenium"):
        require(importlib.util.find_spec(package) is not None, f"the Python package {package}", INSTALL_PACKAGES)


def none_of(found: list, what: str) -> None:
    """Fail with `what` and the list, one per line, when `found` holds anything."""
    if found:
        pytest.fail(f"{what} ({len(found)}):\n  " + "\n  ".join(map(str, found)), pytrace=False)


# The build's own checks, on made-up notebooks ---------------------------------------------------


def notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def code(source: str, outputs=(), **metadata) -> dict:
    return {"cell_type": "code", "id": f"c{len(source)}", "source": source, "metadata": metadata,
            "outputs": list(outputs), "execution_count": 1}


def test_errors_shown_finds_error_outputs_and_printed_tracebacks():
    error = {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": []}
    printed = {"output_type": "stream", "name": "stderr", "text": ["Traceback (most recent call last):\n"]}
    fine = {"output_type": "stream", "name": "stdout", "text": ["perplexity 112.4\n"]}
    nb = notebook(code("1"), code("2", [error]), code("3", [printed]), code("4", [fine]))
    assert site_build.errors_shown(nb) == ["cell 2: ValueError: bad", "cell 3: a traceback printed to stderr"]


def test_reader_view_hides_what_jupyterlab_hides_and_replaces_widgets():
    widget = {"output_type": "display_data", "metadata": {},
              "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "HBox()"}}
    nb = notebook(code("assert x", jupyter={"source_hidden": True}),
                  code("size = 'full'", tags=["injected-parameters"]),
                  code("explorer()", [widget]))
    cells = site_build.reader_view(nb)["cells"]
    assert cells[0]["metadata"]["tags"] == ["hide-input"]
    assert cells[1]["metadata"]["tags"] == ["injected-parameters", "remove-cell"]
    assert cells[2]["outputs"][0]["data"] == {"text/markdown": site_build.WIDGET_NOTE}
    assert nb["cells"][0]["metadata"] == {"jupyter": {"source_hidden": True}}  # the input is not changed


def test_reader_view_shows_consecutive_prints_as_one_block():
    """A table printed line by line can reach the notebook as several stream chunks; the site shows one block
    per stream, as JupyterLab does, and keeps stderr and other outputs apart."""
    def stream(text, name="stdout"):
        return {"output_type": "stream", "name": name, "text": text}

    image = {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "<Figure>"}}
    nb = notebook(code("table()", [stream("a\n"), stream(["b\n", "c\n"]), stream("warn\n", "stderr"), image,
                                   stream("d\n"), stream("e\n")]))
    outputs = site_build.reader_view(nb)["cells"][0]["outputs"]
    assert [(o.get("name"), o.get("text")) for o in outputs] == [
        ("stdout", "a\nb\nc\n"), ("stderr", "warn\n"), (None, None), ("stdout", "d\ne\n")]
    assert len(nb["cells"][0]["outputs"]) == 6  # the notebook itself is not changed


def test_reader_view_drops_the_test_harness_markers():
    """nbval reads `# NBVAL_CHECK_OUTPUT`; a reader has no use for it. The code around it is kept."""
    nb = notebook(code("# NBVAL_CHECK_OUTPUT\nprint(1)  # NBVAL_ not a marker line\n"), code("x = 1\n# NBVAL_SKIP\n"))
    sources = [cell["source"] for cell in site_build.reader_view(nb)["cells"]]
    assert sources == ["print(1)  # NBVAL_ not a marker line", "x = 1"]
    assert nb["cells"][0]["source"].startswith("# NBVAL_CHECK_OUTPUT")  # the notebook itself is not changed


def test_links_to_pages_follow_them_and_other_links_name_the_path():
    pages = {"README.md": "index.md", "chapters/01_x.ipynb": "chapters/01_x.ipynb",
             "exercises/ex01_x.py": "exercises/ex01_x.md"}
    text = ("[ex](../exercises/ex01_x.py), [run](../results/run/), [jt](https://jupytext.readthedocs.io), "
            "[home](../README.md#data), ![plot](plot.png)")
    assert site_build.rewrite_links(text, "chapters/01_x.ipynb", pages) == (
        "[ex](../exercises/ex01_x.md), run in `results/run/`, "
        "[jt](https://jupytext.readthedocs.io), [home](../index.md#data), ![plot](plot.png)")


def fake_repo(root: Path, *cells: dict) -> Path:
    (root / "chapters").mkdir(parents=True)
    (root / "exercises").mkdir()
    (root / "README.md").write_text("# A book\n\nSee [chapter 0](chapters/00_intro.ipynb).\n")
    (root / "exercises" / "README.md").write_text("# Exercises\n")
    nb = notebook({"cell_type": "markdown", "id": "title", "source": "# Chapter 0\n\n$x^2$", "metadata": {}}, *cells)
    (root / "chapters" / "00_intro.ipynb").write_text(json.dumps(nb))
    return root


def test_an_error_output_stops_the_build(tmp_path):
    error = {"output_type": "error", "ename": "RuntimeError", "evalue": "no data", "traceback": []}
    repo = fake_repo(tmp_path / "repo", code("train()", [error]))
    with pytest.raises(site_build.SiteError, match="chapters/00_intro.ipynb cell 2: RuntimeError: no data"):
        site_build.stage(tmp_path / "src", repo)


def test_a_sphinx_warning_fails_the_build(tmp_path):
    require_site_packages()
    assert (site_build.build(tmp_path / "fine", fake_repo(tmp_path / "fine-repo")) / "index.html").exists()
    broken = {"cell_type": "markdown", "id": "gone", "source": "![gone](gone.png)", "metadata": {}}
    with pytest.raises(site_build.SiteError, match="Sphinx failed"):
        site_build.build(tmp_path / "broken", fake_repo(tmp_path / "broken-repo", broken))


# The real site, in a browser ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    require_site_packages()
    output = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, str(REPO / "site" / "build.py"), "--output", str(output)],
                           capture_output=True, text=True, cwd=REPO)
    assert build.returncode == 0, f"make site failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    return output / "html"


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
        httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def executable(variable: str, *names: str) -> str | None:
    """The program named by the environment variable, else the first of `names` on PATH (None: missing)."""
    path = os.environ.get(variable) or next(filter(None, map(shutil.which, names)), None)
    return path if path and os.access(path, os.X_OK) else None


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = executable("CHROMIUM", "chromium", "chromium-browser")
    driver = executable("CHROMEDRIVER", "chromedriver")
    require(chromium is not None, "headless Chromium", INSTALL_BROWSER)
    require(driver is not None, "chromedriver (matching Chromium)", INSTALL_BROWSER)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,900", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
                 # offline by construction: every host but 127.0.0.1 goes to a proxy that is not there
                 "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    chrome.set_page_load_timeout(60)
    chrome.set_script_timeout(60)
    chrome.get("about:blank")  # rather than the new-tab page, whose own requests would be logged
    yield chrome
    chrome.quit()


# whenTypeset(then): calls ``then`` once MathJax, where the page has equations, has typeset them (at most 30 s).
WHEN_TYPESET = r"""
function whenTypeset(then) {
  const started = Date.now();
  const hasMath = document.querySelector('.math') !== null;
  (function wait() {
    if (!hasMath) return then();
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) return MathJax.startup.promise.then(then, then);
    if (Date.now() - started > 30000) return then();
    setTimeout(wait, 50);
  })();
}
"""

# Run in the page once it has loaded and its equations are typeset.
READ_PAGE = WHEN_TYPESET + r"""
const done = arguments[arguments.length - 1];
whenTypeset(report);
function report() {
  const article = document.querySelector('article') || document.body;
  const prose = article.cloneNode(true);
  prose.querySelectorAll('pre, code, script, style, mjx-container, .cell_input').forEach(e => e.remove());
  done({
    math: [...document.querySelectorAll('.math')].map(e => ({
      tex: e.textContent.slice(0, 80), typeset: e.querySelector('mjx-container') !== null,
      error: e.querySelector('mjx-merror') !== null})),
    rawMath: prose.textContent.match(/\$[^$\n]+\$|\\\(|\\\[/g) || [],
    images: [...document.images].map(i => ({src: i.currentSrc, ok: i.complete && i.naturalWidth > 0})),
    outputImages: [...document.querySelectorAll('.cell_output img')].map(i => ({
      src: i.currentSrc, link: i.closest('a') ? i.closest('a').href : null})),
    visibleInputs: [...document.querySelectorAll('.cell_input')].filter(e => e.checkVisibility())
      .map(e => e.innerText),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  });
}
"""


@pytest.fixture(scope="module")
def visits(browser, server):
    """Each page, read once: what the browser logged and what the page shows (keyed by page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    cache = {}

    def visit(page: str) -> dict:
        if page not in cache:
            browser.get_log("browser"), browser.get_log("performance")  # drop the previous page's entries
            browser.get(server + page)
            seen = browser.execute_async_script(READ_PAGE)
            browser.save_screenshot(str(SCREENSHOTS / (page.replace("/", "__").removesuffix(".html") + ".png")))
            seen["console"] = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            requests = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
            seen["requests"] = [r["params"]["request"]["url"] for r in requests
                                if r["method"] == "Network.requestWillBeSent"]
            cache[page] = seen
        return cache[page]

    return visit


def test_every_page_of_the_site_is_checked(site):
    built = {str(p.relative_to(site)) for p in site.rglob("*.html")
             if p.name not in ("genindex.html", "search.html") and "_static" not in p.parts}
    assert built == set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_offline_without_console_errors(visits, server, page):
    seen = visits(page)
    elsewhere = [url for url in seen["requests"] if url.startswith(("http", "ws")) and not url.startswith(server)]
    none_of(elsewhere, f"{page} requests files from other hosts (serve them from the site)")
    none_of(seen["console"], f"{page} logs errors")


@pytest.mark.parametrize("page", PAGES)
def test_equations_render(visits, page):
    seen = visits(page)
    untypeset = [m["tex"] for m in seen["math"] if not m["typeset"] or m["error"]]
    none_of(untypeset, f"{page}: equations that MathJax did not typeset")
    none_of(seen["rawMath"], f"{page} shows raw TeX in its text")


@pytest.mark.parametrize("page", PAGES)
def test_figures_load(visits, page):
    broken = [image["src"] for image in visits(page)["images"] if not image["ok"]]
    none_of(broken, f"{page}: images that did not load")


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_chapter_shows_figures_and_equations(visits, page):
    seen = visits(page)
    assert any("/_images/" in image["src"] for image in seen["images"]), f"{page} shows no figure"
    if not page.startswith("chapters/06"):  # chapter 06 reads its numbers from tables, without equations
        assert seen["math"], f"{page} shows no equation"
    unlinked = [image["src"] for image in seen["outputImages"] if image["link"] != image["src"]]
    none_of(unlinked, f"{page}: figures that do not open at full size when clicked")
    none_of([text for text in seen["visibleInputs"] if "NBVAL_" in text], f"{page} shows nbval's markers")


def taught_asserts(page: str) -> set[str]:
    """The assert lines a chapter shows on purpose: those of its code cells that are not hidden (the few
    that teach, e.g. fast equals reference; tests/test_reader_view.py caps them at ten in the book)."""
    notebook = json.loads((REPO / page).with_suffix(".ipynb").read_text())
    shown = [c for c in notebook["cells"] if c["cell_type"] == "code"
             and "remove-input" not in c["metadata"].get("tags", [])
             and not c["metadata"].get("jupyter", {}).get("source_hidden")]
    return {line.strip() for c in shown for line in "".join(c["source"]).splitlines() if re.match(r"\s*assert\b", line)}


@pytest.mark.parametrize("page", CHAPTER_PAGES + REPORT_PAGES)
def test_no_assert_of_the_harness_is_visible(visits, page):
    """Every assert line the page shows is one the chapter shows on purpose; the harness's are hidden."""
    taught = taught_asserts(page)
    asserts = [[line.strip() for line in cell.splitlines() if re.match(r"\s*assert\b", line)]
               for cell in visits(page)["visibleInputs"]]
    none_of([line for lines in asserts for line in lines if line not in taught],
            f"{page} shows assert lines of hidden harness cells (tag them remove-input)")


class Anchors(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for name, value in attrs if name in ("id", "name") and value)


def test_links_between_pages_resolve(visits, server):
    links = {urldefrag(link) for page in PAGES for link in visits(page)["links"] if link.startswith(server)}
    broken, anchors = [], {}
    for url in sorted({url for url, _ in links}):
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = response.read()
        except OSError as error:
            broken.append(f"{url}: {error}")
            continue
        if url.endswith(".html") or url.endswith("/"):
            parser = Anchors()
            parser.feed(body.decode())
            anchors[url] = parser.ids
    broken += [f"{url}#{fragment}" for url, fragment in links
               if fragment and url in anchors and fragment not in anchors[url]]
    none_of(sorted(broken), "links that do not resolve")
    assert len(links) > len(PAGES)  # the navigation alone links every page


# Run on a chapter page: how many code cells scroll sideways; then what the article header's buttons do.
READ_CODE = r"""
const cells = [...document.querySelectorAll('div.cell_input pre')];
return {cells: cells.length, scrolling: cells.filter(p => p.scrollWidth > p.clientWidth + 2).length,
        article: document.querySelector('.bd-article').clientWidth};
"""
CLICK = "document.querySelector('.bd-header-article .' + arguments[0]).click();"
ARTICLE = "return document.querySelector('.bd-article').clientWidth;"
OUTLINE = r"""
const modal = document.getElementById('pst-secondary-sidebar-modal');
const link = modal.querySelector('a');
const box = link ? link.getBoundingClientRect() : null;
return {open: modal.open, scrollY: window.scrollY,
        linkInView: box !== null && box.top >= 0 && box.bottom <= window.innerHeight && box.width > 0};
"""


@pytest.mark.parametrize("page", CHAPTER_PAGES + REPORT_PAGES)
def test_chapter_layout_at_a_laptop_width(browser, server, page):
    """At 1280 px (the browser's window) the code fits the text column, and the article header's menu and
    outline buttons work: the theme binds its toggles to the top bar's buttons, which book.css hides, and
    book.js forwards the article header's clicks to them. The outline opens in view, where the reader is."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server + page)
    assert 1200 <= browser.execute_script("return window.innerWidth") < 1500, "the test reads the 1200-1500 px layout"
    seen = browser.execute_script(READ_CODE)
    assert seen["scrolling"] <= max(1, seen["cells"] // 10), f"{page}: code cells scroll sideways: {seen}"

    browser.execute_script(CLICK, "primary-toggle")  # the menu: hides the chapters' list, widening the text
    try:
        WebDriverWait(browser, 5).until(lambda b: b.execute_script(ARTICLE) > seen["article"] + 100)
    except Exception:  # selenium's TimeoutException: say what the reader sees
        pytest.fail(f"{page}: the menu button does nothing ({seen['article']} px before and after)")

    # the page laid out (its figures loaded) before the reader scrolls: a figure arriving later moves the text
    WebDriverWait(browser, 10).until(lambda b: b.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))
    # and its equations typeset: MathJax resizes their lines when it is done
    browser.execute_async_script(WHEN_TYPESET + "whenTypeset(arguments[arguments.length - 1]);")
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight / 2)")
    settled = "return [window.scrollY, document.body.scrollHeight]"  # the same twice, 0.3 s apart: nothing still moves
    previous = None
    for _ in range(20):
        now = browser.execute_script(settled)
        if now == previous:
            break
        previous = now
        time.sleep(0.3)
    middle = browser.execute_script("return window.scrollY")
    browser.execute_script(CLICK, "secondary-toggle")  # the outline: opens the page's contents
    outline = browser.execute_script(OUTLINE)
    browser.execute_script("document.getElementById('pst-secondary-sidebar-modal').close()")
    assert outline["open"] and outline["linkInView"], f"{page}: the outline does not open in view: {outline}"
    # a few pixels of late layout aside (the failure this guards against jumps to the top of the page)
    assert abs(outline["scrollY"] - middle) <= 8, f"{page}: opening the outline moves the page ({middle} -> {outline})"
