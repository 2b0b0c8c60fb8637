"""Sphinx configuration of the book's website (`make site`; docs/site.md says why Sphinx + MyST-NB).

Sphinx reads the source folder that site/build.py lays out from the committed notebooks. Nothing is
executed, and nothing a page needs is fetched from the web: MathJax is copied into the site, and the
ipywidgets scripts, which MyST-NB would load from a CDN, are switched off.
"""

import shutil
from importlib.util import find_spec
from pathlib import Path

project = "Memory-augmented recurrent language models"
author = "the mlm authors"
html_title = project
language = "en"

extensions = ["myst_nb"]
root_doc = "index"

# MyST: $...$ and $$...$$ are equations, and headings get anchors that links can name.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 4
highlight_language = "none"  # a fence without a language (the README's file tree) is not Python

# The notebooks' stored outputs are the book: never execute them.
nb_execution_mode = "off"
nb_render_markdown_format = "myst"  # the claims tables are text/markdown outputs with pipe tables
nb_ipywidgets_js = {}  # the default loads require.js and the widgets manager from CDNs

html_theme = "sphinx_book_theme"
html_theme_options = {
    "home_page_in_toc": False,  # the title above the navigation links home
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "footer_content_items": ["extra-footer"],
    "extra_footer": "Built with <code>make site</code> from the committed, executed notebooks; "
                    "open them in JupyterLab (<code>make lab</code>) to run them.",
}
html_context = {"default_mode": "light"}  # no mode stored yet: the theme logs an error without one
html_favicon = "favicon.svg"  # without an icon, browsers ask for /favicon.ico and log its 404
html_static_path = ["_static"]
html_css_files = ["book.css"]
html_js_files = ["book.js"]
html_show_sourcelink = False

# MathJax 3 from the django-static-mathjax wheel (MathJax's own files, Apache-2.0), copied into
# _static/mathjax when the build finishes; a relative mathjax_path is relative to _static. Beside the
# combined component, the parts that its menu loads on demand (accessibility, speech, MathML, SVG output):
# 9 MB, against the 24 MB of every combined component.
mathjax_path = "mathjax/tex-chtml.js"
MATHJAX_PARTS = ["tex-chtml.js", "input", "output", "ui", "a11y", "sre"]


def mathjax_source() -> Path:
    spec = find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("MathJax is missing: pip install -e '.[site]' (it brings django-static-mathjax)")
    return Path(spec.submodule_search_locations[0]) / "static" / "mathjax" / "es5"


MATHJAX = mathjax_source()  # fail before the build, not after it


def copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    for part in MATHJAX_PARTS:
        if (MATHJAX / part).is_dir():
            shutil.copytree(MATHJAX / part, target / part, dirs_exist_ok=True)
        else:
            shutil.copy2(MATHJAX / part, target / part)


def home_title(app, pagename, templatename, context, doctree):
    """The browser names a page "its title — the book"; the home page's own title (the README's heading)
    already names the book, so it is given the subtitle instead of the name twice."""
    if pagename == root_doc:
        context["title"] = "a notebook-first textbook"


def setup(app):
    app.connect("html-page-context", home_title)
    app.connect("build-finished", copy_mathjax)
