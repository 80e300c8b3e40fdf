"""report.html: self-contained, and every figure loads in headless Chromium (Debian's chromium,
installed by scripts/install-deps.sh); the page is not blank, opens with its findings and the
machine, its CPU row is filled in, nothing is wider than the page at 1280 px or 1300 px (its folded
details open), and each section leads with a figure or a one-line verdict, the Roofline section with
the chart of the fastest variant at the largest thread count."""

import re
import shutil
import subprocess

import pytest

import components

PROBE = ('<script>window.addEventListener("load",()=>{const s=[...document.images].map('
         'i=>i.complete&&i.naturalWidth>0?1:0);document.body.setAttribute("data-images",s.join(""));'
         'document.body.setAttribute("data-text",document.body.innerText.length);'
         'const d=document.documentElement;document.body.setAttribute("data-overflow",d.scrollWidth-d.clientWidth);'
         'const cpu=[...document.querySelectorAll("#machine th")].find(h=>h.textContent.trim()=="CPU");'
         'document.body.setAttribute("data-cpu",cpu?cpu.nextElementSibling.textContent.trim().length:-1)});'
         '</script></body>')
WIDTH = 1280


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    components.require("chromium")


def probe_page(browser, page, tmp_path):
    """What the page is like in Chromium at WIDTH px: {"images": '1' per <img> that loaded with a
    non-zero natural width, '0' per broken one; "text": the length of its text; "overflow": how
    many px the document is wider than the window; "cpu": the length of the CPU row's value, -1
    without one}."""
    dom = dump_dom(browser, page.read_text(), PROBE, tmp_path, WIDTH)
    number = {name: int(re.search(rf'data-{name}="(-?\d+)"', dom).group(1)) for name in ("text", "overflow", "cpu")}
    return {"images": re.search(r'data-images="([01]*)"', dom).group(1), **number}


def dump_dom(browser, text, probe, tmp_path, width):
    """The DOM of the page `text` once loaded in Chromium `width` px wide, the script `probe` (which
    ends with </body>) run on it."""
    path = tmp_path / "probe.html"
    path.write_text(text.replace("</body>", probe))
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                        "--hide-scrollbars", f"--window-size={width},1600", "--dump-dom", path.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert "data-" in r.stdout, f"chromium did not run the probe: {r.stderr[-500:]}"
    return r.stdout


@pytest.fixture(scope="module")
def report_page(reported_sweep):
    return reported_sweep[0] / "report.html"


@pytest.fixture(scope="module")
def report_probed(report_page, tmp_path_factory):
    """probe_page of the report, loaded once: each load is seconds of Chromium's CPU time."""
    return probe_page(chromium(), report_page, tmp_path_factory.mktemp("probe"))


@pytest.fixture(scope="module")
def broken_probed(report_page, tmp_path_factory):
    """What both probes find on the report broken four ways at once, in one load: one figure
    corrupted, a line that cannot wrap, the Roofline section opening with a long text and a folded
    table wider than the page. Each probe measures its own defect (loaded images, the document's
    width with <details> closed, the sections' first elements, the right edges with them open), so
    that the defects do not hide one another and each check can still fail on its own."""
    text = report_page.read_text()
    start = text.index("data:image/png;base64,") + len("data:image/png;base64,")
    text = text[:start] + "AAAA" + text[start + 4000:]
    text = text.replace('<section id="machine">', '<p style="white-space:nowrap">' + "x" * 400 + '</p><section id="machine">')
    text = text.replace('<section id="roofline">\n<h2>Roofline</h2>',
                        '<section id="roofline">\n<h2>Roofline</h2><pre>' + "a line\n" * 12 + "</pre>")
    text = text.replace("<details>", "<details><table><tr><td>" + "x" * 300 + "</td></tr></table>", 1)
    # PROBE's listener runs first (the order they were added), before LAYOUT_PROBE opens the <details>
    dom = dump_dom(chromium(), text, PROBE.removesuffix("</body>") + LAYOUT_PROBE, tmp_path_factory.mktemp("broken"),
                   LAYOUT_WIDTH)
    return {"images": re.search(r'data-images="([01]*)"', dom).group(1),
            "overflow": int(re.search(r'data-overflow="(-?\d+)"', dom).group(1)), "layout": read_layout(dom)}


def test_report_is_self_contained(report_page):
    text = report_page.read_text()
    sources = re.findall(r'<img src="([^"]*)"', text)
    assert len(sources) >= 6  # speedup/efficiency figures, factors, traffic light, timelines
    assert all(s.startswith("data:image/") for s in sources)
    assert not re.search(r'(src|href)="(https?:|//)', text)
    for section in ("findings", "machine", "identity", "summary", "efficiency", "timelines", "roofline", "failures"):
        assert f'id="{section}"' in text
    # the answer first: the findings, then the machine, then the rest
    assert text.index('id="findings"') < text.index('id="machine"') < text.index('id="identity"')
    assert "OMP_PROC_BIND=close" in text and "{'OMP_PROC_BIND'" not in text  # placement for people
    assert "Parallel efficiency" in text and "need counters" in text


def test_report_opens_in_headless_chromium(report_page, report_probed, broken_probed, tmp_path):
    browser = chromium()
    images = report_probed["images"]
    assert images and set(images) == {"1"}, f"broken images: {images}"
    assert report_probed["text"] > 500
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1200,1600", report_page.as_uri()], capture_output=True, timeout=120)
    import matplotlib.image
    pixels = matplotlib.image.imread(str(shot))
    assert pixels.std() > 0.02, "the screenshot is blank"
    # the probe can fail: a page with one corrupted figure is caught
    assert "0" in broken_probed["images"]


def test_report_fits_the_page_and_names_the_cpu(report_probed, broken_probed):
    """No line, table or caption leaves the page at 1280 px (the document's scrollWidth is its
    clientWidth), and the CPU row shows meta.json's cpu.model."""
    found = report_probed
    assert found["overflow"] == 0, f"the page is {found['overflow']} px wider than {WIDTH} px"
    assert found["cpu"] > 0, "the CPU row is empty or missing"
    # the check can fail: a line that cannot wrap makes the page wider
    assert broken_probed["overflow"] > 0


# Per section: the first element under its heading ("FIGURE", or "P.verdict" and how many lines it
# takes), and how many lines of text come before its first figure or table; then, every <details>
# opened, the elements whose right edge is past the window's.
LAYOUT_PROBE = (
    '<script>window.addEventListener("load",()=>{'
    'const lines=e=>{const c=getComputedStyle(e);const h=parseFloat(c.lineHeight)||1.2*parseFloat(c.fontSize);'
    'return Math.round(e.getBoundingClientRect().height/h)};'
    'const shown=e=>e.matches("figure,table,img")||e.querySelector("figure,table,img")&&e.tagName!="DETAILS";'
    'const out=[];for(const s of document.querySelectorAll("section")){'
    'const kids=[...s.children].filter(e=>e.tagName!="H2");let before=0;'
    'for(const k of kids){if(shown(k))break;before+=lines(k)}'
    'const f=kids[0];out.push(s.id+":"+f.tagName+(f.className?"."+f.className:"")+":"+lines(f)+":"+before)}'
    'document.body.setAttribute("data-sections",out.join(" "));'
    'document.querySelectorAll("details").forEach(d=>d.open=true);'
    'const w=document.documentElement.clientWidth;'
    'const wide=[...document.body.querySelectorAll("*")].filter(e=>e.getBoundingClientRect().right>w+0.5)'
    '.map(e=>e.tagName+(e.className?"."+e.className:""));'
    'document.body.setAttribute("data-wide",wide.join(" ")||"none")});</script></body>')


LAYOUT_WIDTH = 1300


def layout(browser, text, tmp_path):
    """({section id: (first element, its lines, lines before the first figure or table)}, the elements
    wider than the page with every <details> open) of a page in Chromium LAYOUT_WIDTH px wide."""
    return read_layout(dump_dom(browser, text, LAYOUT_PROBE, tmp_path, LAYOUT_WIDTH))


def read_layout(dom):
    """layout's answer, from the DOM LAYOUT_PROBE left."""
    sections = {}
    for item in re.search(r'data-sections="([^"]*)"', dom).group(1).split():
        name, first, first_lines, before = item.split(":")
        sections[name] = (first, int(first_lines), int(before))
    wide = re.search(r'data-wide="([^"]*)"', dom).group(1)
    return sections, [] if wide == "none" else wide.split()


def test_sections_lead_with_a_figure_or_a_verdict_and_fit_at_1300_px(report_page, broken_probed, tmp_path):
    """Every section opens with a figure or a verdict of at most two lines, with no more than 10
    lines of text before its first figure or table; with its tables and folded text open, no
    element is wider than the page; no cell says <NA>; the Roofline section opens with the chart of
    the fastest point at the largest thread count, then its one-sentence verdict."""
    browser = chromium()
    text = report_page.read_text()
    sections, wide = layout(browser, text, tmp_path)
    assert {"findings", "machine", "identity", "summary", "figures", "efficiency", "timelines", "roofline",
            "failures"} <= set(sections)
    for name, (first, first_lines, before) in sections.items():
        assert first == "FIGURE" or (first == "P.verdict" and first_lines <= 2), (name, first, first_lines)
        assert before <= 10, (name, before)
    assert sections["roofline"][0] == "FIGURE"
    assert not wide, f"wider than the page at 1300 px: {wide[:10]}"
    assert "&lt;NA&gt;" not in text and "<NA>" not in text
    fastest = re.search(r"Fastest at (\d+) threads \([^)]*\): ([^,]+),", text)
    roofline = text[text.index('<section id="roofline">'):]
    lead = re.search(r'<img src="[^"]*" alt="([^"]*)"', roofline).group(1)
    assert lead.startswith(f"{fastest.group(2)} at {fastest.group(1)} threads"), lead
    assert roofline.index(lead) < roofline.index('<p class="verdict">')
    # the probe can fail: a section that opens with a long text, a folded table wider than the page
    sections, wide = broken_probed["layout"]
    assert sections["roofline"][0] == "PRE" and sections["roofline"][2] >= 12
    assert "TABLE" in wide
