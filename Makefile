# The book's two commands:
#   make book   create .venv if needed, install, execute every chapter (reduced size) and report into book_output/
#   make test   unit tests + exercise grading + nbval on the executed chapters and reports + the website in a browser
# and the website: make site   build/site/html from the committed executed notebooks (docs/site.md)
# Corpora are read from $MLM_DATA_DIR (default $XDG_CACHE_HOME/mlm or ~/.cache/mlm, downloaded there when online).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SIZE ?= reduced
CHAPTERS ?=
OUTPUT ?= book_output
SITE_OUTPUT ?= build/site

# The chapters run in chapters/, so a relative MLM_DATA_DIR (e.g. ../shared/data) is made absolute here.
ifdef MLM_DATA_DIR
export MLM_DATA_DIR := $(abspath $(MLM_DATA_DIR))
endif

.PHONY: install install-site install-course book site test chapters sync lab bench clean

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

# The site's packages, an optional group: readers who only use JupyterLab never install them.
install-site: $(VENV)/.installed-site

$(VENV)/.installed-site: $(VENV)/.installed pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[site]"
	touch $@

# The course kit's tools (nbgrader), an optional group: tests/test_course.py loads the notebooks in it.
install-course: $(VENV)/.installed-course

$(VENV)/.installed-course: $(VENV)/.installed pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[course]"
	touch $@

book: install
	$(BIN)/python -m mlm book $(CHAPTERS) --size $(SIZE) --output $(OUTPUT)

# The website from the committed notebooks, executing nothing; serve it with
# python -m http.server -d $(SITE_OUTPUT)/html (search needs http), or open $(SITE_OUTPUT)/html/index.html.
site: install-site
	$(BIN)/python site/build.py --output $(SITE_OUTPUT)

# tests/test_site.py builds the site and reads it in headless Chromium (apt-get install chromium chromium-driver).
test: install install-site install-course
	MLM_HEADLESS=1 $(BIN)/python -m pytest tests --nbval-lax --nbval-current-env --nbval-cell-timeout=1800 chapters reports

# Re-execute the chapters and reports and store the executed notebooks beside their sources (what gets committed).
chapters: install
	$(BIN)/python -m mlm book $(CHAPTERS) --size reduced --output $(OUTPUT) --inplace

# After editing a chapter's .py (the source of truth), refresh the paired notebook's code and markdown,
# keeping its outputs (CHAPTERS=NN for some). Always from .py to .ipynb: `jupytext --sync` would take
# whichever file is newer, and an executed notebook is newer than its source.
sync: install
	$(BIN)/jupytext --update --to notebook $(if $(CHAPTERS),$(foreach c,$(CHAPTERS),$(wildcard chapters/$(c)_*.py reports/$(c)_*.py)),chapters/[0-9][0-9]_*.py reports/r[0-9][0-9]_*.py)

lab: install
	$(BIN)/jupyter lab chapters

bench: install
	$(BIN)/python -m mlm bench zaremba2014-small press2017-small-tied zaremba2014-medium

clean:
	rm -rf $(OUTPUT) $(SITE_OUTPUT) build/site-screenshots .pytest_cache
