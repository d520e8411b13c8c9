"""The HTML report (``ormbench report FILE... --html OUT.html``, issue 34): one self-contained page, the figures the
JSON gives, and, in a real headless browser (Debian's chromium and chromium-driver, driven by selenium), a page that
loads without errors, filters, sorts and draws.

The browser tests skip, saying why, where chromium, chromedriver or selenium is missing (CI installs them).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from pytest_ormbench.commands.main import main
from pytest_ormbench.results.record import CellRecord, Environment, Facts
from pytest_ormbench.results.report.html import LEADERS_NOTE, _script_json, data, render_html
from pytest_ormbench.results.report.load import load, runs_from_records
from pytest_ormbench.results.report.tables import CONTESTED_NOTE, busy_line, detail
from pytest_ormbench.workload.cells import CellKey
from pytest_ormbench.workload.measures import GC_COLLECTIONS, WALL

ROOT = Path(__file__).resolve().parent.parent

# its module-scoped fixture built once, on one worker (tests/conftest.py, pytest_collection_modifyitems)
pytestmark = pytest.mark.xdist_group("test_html")

RESULTS = ROOT / "results"
DATA = ROOT / "tests" / "data"
REGENERATE = "run `ormbench report results/*.json --html results/index.html` (from the repository) and commit it"
CHROMIUM = os.environ.get("ORMBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ORMBENCH_CHROMEDRIVER", "/usr/bin/chromedriver")


def _published() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in RESULTS.glob("*.json"))


def _page_data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="ormbench-data">(.*?)</script>', html, re.S)
    assert found, "the page has no data element"
    return json.loads(found.group(1))


# ---- without a browser ----

def test_committed_page_is_what_the_json_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _published()
    if not files:
        pytest.skip("no published run in results/ yet")
    assert (RESULTS / "index.html").exists(), f"results/ has JSON but no index.html: {REGENERATE}"
    monkeypatch.chdir(ROOT)  # the page names its sources as given: results/…
    assert main(["report", *files, "--html", str(tmp_path / "index.html")]) == 0
    assert (tmp_path / "index.html").read_text(encoding="utf-8") == (RESULTS / "index.html").read_text(encoding="utf-8"), \
        f"results/index.html is not what the JSON gives: {REGENERATE}"


def test_html_alone_writes_only_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "sub" / "page.html"
    assert main(["report", "tests/data/cold.json", "tests/data/warm.json", "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and f"wrote {out}" in captured.err
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # beside -o, both are written
    md = tmp_path / "report.md"
    assert main(["report", "tests/data/cold.json", "--html", str(out), "-o", str(md), "--no-charts"]) == 0
    assert md.read_text(encoding="utf-8").startswith("# pytest-ormbench results")


def test_bad_input_is_one_line_and_no_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "page.html"
    assert main(["report", str(tmp_path / "missing.json"), "--html", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not out.exists()


def test_the_page_is_self_contained_and_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    runs = load(["tests/data/cold.json", "tests/data/warm.json"])
    html = render_html(runs)
    assert html == render_html(load(["tests/data/warm.json", "tests/data/cold.json"]))  # order does not matter
    # nothing fetched when it is read: no external script, style, image, font or frame
    assert not re.search(r"""<(script|link|img|iframe|source)\b[^>]*\b(src|href)=["'](?!data:|#)""", html, re.I)
    assert not re.search(r"@import|url\((?!#)", html)
    assert "{{" not in html  # every marker filled
    page = _page_data(html)
    assert [p["id"] for p in page["places"]] == ["sqlite"]
    assert {a["id"] for a in page["arms"]} == {c.record.key.arm for c in runs.cells.values()}


def test_the_page_holds_each_cells_figure_and_its_rounds_spread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    runs = load(["tests/data/cold.json", "tests/data/warm.json"])
    page = data(runs)
    fields = page["cellFields"]
    arms = [a["id"] for a in page["arms"]]
    seen = 0
    for g in page["groups"]:
        for row in g["cells"]:
            c = dict(zip(fields, row))
            cell = runs.cells[CellKey(arms[c["arm"]], g["model"], c["op"], g["mode"], g["table"])]
            rows, secs = cell.record.rows, cell.record.seconds
            assert c["rate"] == pytest.approx(cell.rows_per_s, rel=1e-5)
            assert (c["lo"], c["hi"]) == (pytest.approx(rows / max(secs), rel=1e-5),
                                          pytest.approx(rows / min(secs), rel=1e-5))
            assert c["lo"] <= c["rate"] <= c["hi"]
            seen += 1
    assert seen == len(runs.cells)


def test_data_cannot_close_the_script_element() -> None:
    text = _script_json({"note": "</script><script>alert(1)</script> <!-- \u2028"})
    assert "</" not in text and "<!--" not in text and "\u2028" not in text
    assert json.loads(text) == {"note": "</script><script>alert(1)</script> <!-- \u2028"}


# ---- who leads: the Markdown's rule (tables.leader), not the fastest figure ----

LABELS = {"sqlite3": "raw sqlite3", "peewee": "peewee", "django": "Django", "sqlobject": "SQLObject"}


def _record(arm: str, op: str, seconds: float) -> CellRecord:
    """A timed cell of 100 rows a round, three tight rounds (±1 %) around ``seconds``."""
    rounds = [seconds * 0.99, seconds, seconds * 1.01]
    return CellRecord(key=CellKey(arm, "simple", op, "warm", "default"), rows=100, start_rows=0, iterations=100,
                      batch=1000, settings={}, env=Environment(arm_label=LABELS[arm]), facts=Facts(),
                      measures={WALL: rounds, GC_COLLECTIONS: [0.0] * len(rounds)})


def _synthetic(paces: dict[str, float], floor: float):
    """One run of ops A and D at these round times per arm, its drift floor as given."""
    facts = {"schedule": "interleaved", "drift_floor": floor,
             "probes": [{"when": "start", "rows_per_s": 100_000.0}, {"when": "after round 1", "rows_per_s": 102_000.0}]}
    records = [_record(arm, op, s) for op in "AD" for arm, s in paces.items()]
    return runs_from_records(records, {"machine": "x86_64"}, "2026-12-04T10:00:00", facts)


#: peewee and Django 3 % apart, far inside a 30 % drift floor; the raw control 20 % ahead (it is no contender)
CLOSE = {"sqlite3": 0.0025, "peewee": 0.0030, "django": 0.00309}
#: peewee twice as fast as Django, three tight rounds each, a quiet run
CLEAR = {"sqlite3": 0.001, "peewee": 0.002, "django": 0.004}


def _group(page: dict) -> dict:
    (group,) = page["groups"]
    return group


def test_a_lead_within_the_floor_is_contested_and_bolds_nobody() -> None:
    runs = _synthetic(CLOSE, 0.30)
    group = _group(data(runs))
    assert group["best"] == {} and group["contested"] == ["A", "D", "gm"]
    # the Markdown says the same of the same figures
    assert [row[-1] for row in detail(runs, "simple", "warm", "default").rows] == ["contested"] * 3
    html = render_html(runs)
    legend = re.search(r'<li id="contested-legend">(.*?)</li>', html).group(1)
    assert re.sub("<[^>]+>", "", legend).replace("&#x27;", "'") == CONTESTED_NOTE.format(floor="")  # Markdown's words
    assert LEADERS_NOTE in html  # the filters do not move a leader
    assert any(n.startswith("contested:") and "up to 30%" in n for n in _page_data(html)["notes"])


def test_a_clear_lead_of_two_is_bold() -> None:
    runs = _synthetic(CLEAR, 0.02)
    page = data(runs)
    group = _group(page)
    arms = [a["id"] for a in page["arms"]]
    assert {col: arms[i] for col, i in group["best"].items()} == {"A": "peewee", "D": "peewee", "gm": "peewee"}
    assert group["contested"] == []
    assert [row[-1] for row in detail(runs, "simple", "warm", "default").rows] == ["peewee"] * 3


def test_a_busy_run_says_so_in_the_page_header() -> None:
    busy = _synthetic(CLOSE, 0.30)
    line = busy_line(busy)
    assert line is not None and line.startswith("Busy run:")
    header = render_html(busy).split("</header>")[0]
    assert f'<p class="busy" id="busy"><strong>{line}</strong></p>' in header.replace("&#x27;", "'")
    assert busy_line(_synthetic(CLEAR, 0.02)) is None and 'class="busy"' not in render_html(_synthetic(CLEAR, 0.02))


# ---- in a real headless browser ----

def _browser_missing() -> str | None:
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.exists(path) or shutil.which(path)):
            return f"no {path}: apt-get install chromium chromium-driver (the {package} package)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install selenium"
    return None


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The published results as a page (tests/data's runs when there are none)."""
    files = [str(ROOT / f) for f in _published()] or [str(DATA / "cold.json"), str(DATA / "warm.json")]
    out = tmp_path_factory.mktemp("html") / "index.html"
    out.write_text(render_html(load(files)), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    why = _browser_missing()
    if why:
        pytest.skip(f"no headless browser to test the page in: {why}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ormbench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which(CHROMIUM) or CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--window-size=1400,1000", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which(CHROMEDRIVER) or CHROMEDRIVER))
    try:
        # no network at all: a page that needed any would show errors in its log
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                    "downloadThroughput": -1, "uploadThroughput": -1})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(driver, page: Path) -> None:  # noqa: ANN001
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.as_uri())
    WebDriverWait(driver, 20).until(lambda d: d.find_element("tag name", "body").get_attribute("data-ready") == "1")


def _severe(driver) -> list:  # noqa: ANN001
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def _rows(driver, selector: str = "#detail tbody tr") -> int:  # noqa: ANN001
    return len([r for r in driver.find_elements("css selector", selector) if r.is_displayed()])


def _figure(text: str) -> float | None:
    head = text.strip().splitlines()[0] if text.strip() else ""
    m = re.match(r"[\d,]+(?:\.\d+)?", head)
    return float(m.group(0).replace(",", "")) if m else None


def test_the_page_loads_offline_without_console_errors(browser, page_file: Path) -> None:  # noqa: ANN001
    browser.get_log("browser")  # what an earlier page logged
    _open(browser, page_file)
    assert _severe(browser) == []
    assert _rows(browser, "#overall tbody tr") > 0 and _rows(browser) > 0
    assert browser.find_elements("css selector", "#detail svg.chart rect")  # the charts are drawn


def test_filters_change_what_is_shown(browser, page_file: Path) -> None:  # noqa: ANN001
    _open(browser, page_file)
    groups = browser.find_elements("css selector", "#detail .group")
    before, tables = _rows(browser), len(groups)
    assert before > 0
    # an arm unchecked: its row leaves every table that had it
    box = browser.find_elements("css selector", 'fieldset[data-filter="arms"] input')[-1]
    arm = box.get_attribute("value")
    had = len(browser.find_elements("css selector", f'#detail tr[data-arm="{arm}"]'))
    assert had > 0
    box.click()
    assert _rows(browser) == before - had
    assert not browser.find_elements("css selector", f'#detail tr[data-arm="{arm}"]')
    linked = browser.current_url.split("arms=")[1].split("&")[0].replace("%2C", ",").split(",")  # the view's link
    assert arm not in linked and len(linked) == len(browser.find_elements("css selector",
                                                                          'fieldset[data-filter="arms"] input')) - 1
    box.click()
    assert _rows(browser) == before
    # a test unchecked: its tables go
    test = browser.find_elements("css selector", 'fieldset[data-filter="tests"] input')[0]
    model = test.get_attribute("value")
    test.click()
    left = browser.find_elements("css selector", "#detail .group")
    assert 0 < len(left) < tables and all(g.get_attribute("data-model") != model for g in left)
    test.click()
    # a mode unchecked, then another database selected
    browser.find_elements("css selector", 'fieldset[data-filter="modes"] input')[0].click()
    assert 0 < len(browser.find_elements("css selector", "#detail .group")) < tables
    browser.find_elements("css selector", 'fieldset[data-filter="modes"] input')[0].click()
    from selenium.webdriver.support.ui import Select

    select = Select(browser.find_element("id", "filter-db"))
    places = [o.get_attribute("value") for o in select.options]
    for place in places[1:2]:
        select.select_by_value(place)
        shown = browser.find_elements("css selector", "#detail .group")
        assert shown and all(g.get_attribute("data-place") == place for g in shown)
        statics = [s for s in browser.find_elements("css selector", "#static-tables section[data-db]")
                   if s.get_attribute("data-db")]
        assert all(s.is_displayed() == (s.get_attribute("data-db") == place) for s in statics)
    assert _severe(browser) == []


def test_clicking_a_header_sorts_the_table(browser, page_file: Path) -> None:  # noqa: ANN001
    _open(browser, page_file)

    def column(col: str) -> list[float | None]:
        box = browser.find_elements("css selector", "#detail .group")[0]
        heads = [h.get_attribute("data-col") for h in box.find_elements("css selector", "thead th")]
        i = heads.index(col)
        return [_figure(r.find_elements("css selector", "td")[i].text) for r in box.find_elements("css selector", "tbody tr")]

    def click(col: str) -> None:
        box = browser.find_elements("css selector", "#detail .group")[0]
        box.find_element("css selector", f'thead th[data-col="{col}"]').click()

    first = browser.find_elements("css selector", "#detail .group")[0]
    letter = first.find_elements("css selector", "thead th")[1].get_attribute("data-col")
    click(letter)
    values = [v for v in column(letter) if v is not None]
    assert len(values) > 2 and values == sorted(values, reverse=True)  # highest first
    th = browser.find_elements("css selector", "#detail .group")[0].find_element("css selector", f'th[data-col="{letter}"]')
    assert th.get_attribute("aria-sort") == "descending"
    click(letter)
    values = [v for v in column(letter) if v is not None]
    assert values == sorted(values)
    # the chart follows the column the table is sorted by
    chart = browser.find_elements("css selector", "#detail .group")[0].find_element("css selector", "svg.chart title")
    assert f"{letter} " in chart.get_attribute("textContent")
    click("arm")
    names = [r.find_element("css selector", "td").text.rstrip("†") for r in
             browser.find_elements("css selector", "#detail .group")[0].find_elements("css selector", "tbody tr")]
    assert names == sorted(names, key=str.casefold), names
    # a static table (the runs) sorts too
    runs = browser.find_element("css selector", '#static-tables section[data-kind="runs"] table')
    runs.find_elements("css selector", "thead th")[0].click()
    files = [r.find_element("css selector", "td").text for r in runs.find_elements("css selector", "tbody tr")]
    assert files == sorted(files)
    runs.find_elements("css selector", "thead th")[0].click()
    files = [r.find_element("css selector", "td").text for r in runs.find_elements("css selector", "tbody tr")]
    assert files == sorted(files, reverse=True)
    assert _severe(browser) == []


def test_a_screenshot_is_not_blank(browser, page_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    image = pytest.importorskip("PIL.Image", reason="Pillow (matplotlib's dependency, the [plot] extra) reads the PNG")
    _open(browser, page_file)
    overall = browser.get_screenshot_as_png()
    (tmp_path / "overall.png").write_bytes(overall)
    browser.execute_script("document.getElementById('detail-section').scrollIntoView()")
    detail = browser.get_screenshot_as_png()
    (tmp_path / "detail.png").write_bytes(detail)
    for png in (overall, detail):
        img = image.open(io.BytesIO(png)).convert("RGB")
        assert img.size[0] >= 1000
        colours = img.getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 64, "the screenshot is (nearly) blank"


def test_a_contested_column_is_marked_and_a_clear_lead_bold_in_the_browser(browser, tmp_path: Path) -> None:  # noqa: ANN001
    close, clear = tmp_path / "close.html", tmp_path / "clear.html"
    close.write_text(render_html(_synthetic(CLOSE, 0.30)), encoding="utf-8")
    clear.write_text(render_html(_synthetic(CLEAR, 0.02)), encoding="utf-8")
    _open(browser, close)
    marked = [th.get_attribute("data-col") for th in browser.find_elements("css selector", "#detail th.contested")
              if th.find_element("css selector", ".contested-mark").is_displayed()]
    assert marked == ["A", "D", "gm"]
    assert not browser.find_elements("css selector", "#detail td.best")  # nobody bold
    assert browser.find_element("id", "busy").is_displayed()
    assert "contested:" in browser.find_element("id", "leaders-legend").text
    # sorting by a contested column keeps its mark
    browser.find_element("css selector", '#detail th[data-col="A"]').click()
    assert browser.find_element("css selector", '#detail th[data-col="A"]').get_attribute("aria-sort") == "descending"
    assert browser.find_elements("css selector", '#detail th[data-col="A"] .contested-mark')
    _open(browser, clear)
    bold = {(v.find_element("xpath", "../..").get_attribute("data-arm"), v.value_of_css_property("font-weight"))
            for v in browser.find_elements("css selector", "#detail td.best .v")}
    assert bold == {("peewee", "700")} and len(browser.find_elements("css selector", "#detail td.best")) == 3
    assert not browser.find_elements("css selector", "#detail th.contested, #busy")
    assert _severe(browser) == []
