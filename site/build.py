"""Build the book's website from the committed, executed notebooks: `make site`, or

    python site/build.py [--output build/site]      # the site is OUTPUT/html; serve it (search needs http)

Nothing is executed: the outputs that papermill stored in chapters/*.ipynb are the book. The build
1. stops if a chapter's stored outputs show an error (an error output, a printed traceback);
2. lays out a Sphinx source folder in OUTPUT/src: the home page from README.md, one page per chapter
   (Part I; a copy of its notebook as a reader sees it: the inputs that JupyterLab would hide are hidden),
   one per reproduction report (Part II), the exercises page from exercises/README.md and one page per
   assignment template;
3. runs Sphinx with site/conf.py into OUTPUT/html, every warning an error (sphinx-build exits 0 on
   warnings otherwise: a broken link or an unrenderable output would pass unseen).
"""

from __future__ import annotations

import argparse
import ast
import json
import posixpath
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SITE = REPO / "site"

# JupyterLab's own "collapsed" marks, and the tag each becomes on the site. MyST-NB itself honours the
# tags remove-input, remove-output, remove-cell, hide-input, hide-output and hide-cell.
JUPYTER_HIDDEN = {"source_hidden": "hide-input", "outputs_hidden": "hide-output"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = ("*An interactive explorer: open this chapter in JupyterLab (`make lab`) to use it; "
               "the figures above and below show its results.*")
MARKDOWN_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


class SiteError(RuntimeError):
    """The site cannot be built as it stands: the message says what to fix."""


def chapters(repo: Path = REPO) -> list[Path]:
    return sorted((repo / "chapters").glob("[0-9][0-9]_*.ipynb"))


def reports(repo: Path = REPO) -> list[Path]:
    return sorted((repo / "reports").glob("r[0-9][0-9]_*.ipynb"))


def assignments(repo: Path = REPO) -> list[Path]:
    return sorted((repo / "exercises").glob("ex[0-9][0-9]_*.py"))


def errors_shown(notebook: dict) -> list[str]:
    """One line per cell whose stored outputs show an error (an empty list: none does)."""
    found = []
    for number, cell in enumerate(notebook["cells"], start=1):
        for output in cell.get("outputs", []):
            if output["output_type"] == "error":
                found.append(f"cell {number}: {output['ename']}: {output['evalue']}")
            elif output["output_type"] == "stream" and "Traceback (most recent call last)" in "".join(output["text"]):
                found.append(f"cell {number}: a traceback printed to {output['name']}")
        if cell.get("metadata", {}).get("papermill", {}).get("exception"):
            found.append(f"cell {number}: papermill marked it as the cell that raised")
    return sorted(set(found), key=found.index)


NBVAL_MARKER = re.compile(r"\s*# NBVAL_\w+\s*$")


def reader_view(notebook: dict) -> dict:
    """The notebook as the site shows it: inputs collapsed in JupyterLab are hidden, papermill's
    injected-parameters cell (a copy of the parameters cell) is removed, a widget, whose state is not
    stored, becomes a note instead of an empty frame, and consecutive prints to one stream become one block
    (as JupyterLab shows them) instead of a box per chunk the kernel happened to flush. The test
    harness's markers (`# NBVAL_CHECK_OUTPUT` lines, which nbval reads) are dropped from the code shown."""
    notebook = json.loads(json.dumps(notebook))
    notebook["metadata"].pop("widgets", None)
    for cell in notebook["cells"]:
        metadata = cell.setdefault("metadata", {})
        tags = metadata.setdefault("tags", [])
        tags += [tag for key, tag in JUPYTER_HIDDEN.items() if metadata.get("jupyter", {}).get(key)]
        if "injected-parameters" in tags:
            tags.append("remove-cell")
        if cell["cell_type"] == "code":
            source = "".join(cell["source"]).splitlines(keepends=True)
            cell["source"] = "".join(line for line in source if not NBVAL_MARKER.match(line)).strip("\n")
        merged = []
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                output["data"] = {"text/markdown": WIDGET_NOTE}
            previous = merged[-1] if merged else {}
            if output.get("output_type") == previous.get("output_type") == "stream" and \
                    output.get("name") == previous.get("name"):
                previous["text"] = "".join(previous["text"]) + "".join(output["text"])
            else:
                merged.append(output)
        if "outputs" in cell:
            cell["outputs"] = merged
        metadata["tags"] = sorted(set(tags), key=tags.index)
    return notebook


def rewrite_links(text: str, source: str, pages: dict[str, str]) -> str:
    """Point the relative links of `text` (the file `source`, a repository path) at the site: a link to
    a file that has a page goes to that page; one to any other file or folder of the repository, which
    the site does not hold, becomes its text followed by the path ("results in `results/run/`")."""
    page = pages[source]

    def replace(match: re.Match) -> str:
        label, target = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if repo_path in pages:
            link = posixpath.relpath(pages[repo_path], posixpath.dirname(page) or ".")
            return f"[{label}]({link}{'#' + anchor if anchor else ''})"
        return f"{label} in `{repo_path}{'/' if path.endswith('/') else ''}`"

    return MARKDOWN_LINK.sub(replace, text)


def assignment_page(template: Path, chapter: Path | None) -> str:
    title = ast.get_docstring(ast.parse(template.read_text())).splitlines()[0].rstrip(".")
    number = template.name[2:4]
    where = f" for [chapter {int(number)}](../chapters/{chapter.name})" if chapter else ""
    return (f"# {title}\n\n"
            f"The template{where}, `exercises/{template.name}` ({{download}}`download <{template.name}>`): "
            f"fill in the functions, then grade them with `python -m exercises.grader {number}`. "
            f"The [exercises page](index.md) says how to work and how grading works.\n\n"
            f"```{{literalinclude}} {template.name}\n:language: python\n```\n")


def toctree(entries: list[str], caption: str = "") -> str:
    options = ":hidden:\n" + (f":caption: {caption}\n" if caption else "")
    return "\n```{toctree}\n" + options + "\n" + "\n".join(entries) + "\n```\n"


def stage(src: Path, repo: Path = REPO) -> None:
    """Lay out the Sphinx source folder `src` from the repository."""
    notebooks, audits, templates = chapters(repo), reports(repo), assignments(repo)
    errors = [f"{nb.relative_to(repo)} {line}" for nb in notebooks + audits
              for line in errors_shown(json.loads(nb.read_text()))]
    if errors:
        raise SiteError("the stored outputs show errors; re-execute these notebooks (make chapters CHAPTERS=NN):\n  "
                        + "\n  ".join(errors))
    pages = {"README.md": "index.md", "exercises/README.md": "exercises/index.md"}
    pages |= {f"{nb.parent.name}/{nb.name}": f"{nb.parent.name}/{nb.name}" for nb in notebooks + audits}
    pages |= {f"exercises/{t.name}": f"exercises/{t.stem}.md" for t in templates}

    shutil.rmtree(src, ignore_errors=True)
    for folder in ("chapters", "reports", "exercises"):
        (src / folder).mkdir(parents=True)
    for nb in notebooks + audits:
        notebook = reader_view(json.loads(nb.read_text()))
        for cell in notebook["cells"]:
            if cell["cell_type"] == "markdown":
                text = rewrite_links("".join(cell["source"]), f"{nb.parent.name}/{nb.name}", pages)
                cell["source"] = text.splitlines(keepends=True)
        (src / nb.parent.name / nb.name).write_text(json.dumps(notebook, indent=1, ensure_ascii=False))

    readme = (repo / "README.md").read_text()
    for image in MARKDOWN_IMAGE.findall(readme):  # the home page's figures, at the same relative paths
        if not re.match(r"[a-z][a-z0-9+.-]*:", image):
            (src / image).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / image, src / image)
    home = rewrite_links(readme, "README.md", pages)
    home += toctree([f"chapters/{nb.stem}" for nb in notebooks], caption="Part I: the chapters")
    home += toctree([f"reports/{nb.stem}" for nb in audits], caption="Part II: reproduction reports")
    home += toctree(["exercises/index"])  # the page's own title, Exercises, heads it in the navigation
    (src / "index.md").write_text(home)

    exercises = rewrite_links((repo / "exercises" / "README.md").read_text(), "exercises/README.md", pages)
    for t in templates:  # the table's file names link to the assignments' pages
        exercises = exercises.replace(f"`{t.name}`", f"[`{t.name}`]({t.stem}.md)")
    exercises += toctree([t.stem for t in templates])
    (src / "exercises" / "index.md").write_text(exercises)
    by_number = {nb.name[:2]: nb for nb in notebooks}
    for t in templates:
        shutil.copy2(t, src / "exercises" / t.name)
        (src / "exercises" / f"{t.stem}.md").write_text(assignment_page(t, by_number.get(t.name[2:4])))


def build(output: Path, repo: Path = REPO) -> Path:
    """Stage and build the site under `output`; return the folder of the HTML site."""
    from sphinx.cmd.build import build_main

    src, html = output / "src", output / "html"
    stage(src, repo)
    shutil.rmtree(html, ignore_errors=True)
    status = build_main(["-b", "html", "-W", "--keep-going", "-q", "-E",
                         "-c", str(SITE), "-d", str(output / "doctrees"), str(src), str(html)])
    if status != 0:
        raise SiteError(f"Sphinx failed (exit status {status}): the warnings above say where")
    return html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=REPO / "build" / "site", help="default: build/site")
    args = parser.parse_args(argv)
    try:
        html = build(args.output.resolve())
    except SiteError as error:
        print(f"site: {error}", file=sys.stderr)
        return 1
    print(f"site: {html / 'index.html'}  (python -m http.server -d {html}, then http://127.0.0.1:8000:"
          " search needs a server)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
