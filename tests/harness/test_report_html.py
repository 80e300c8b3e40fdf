"""report.html: self-contained, and every figure loads in headless Chromium (Debian's chromium,
installed by scripts/install-deps.sh); the page is not blank, opens with its findings and the
machine, its CPU row is filled in, and nothing is wider than the page at 1280 px."""

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


def probe_page(browser, page, tmp_path, text=None):
    """What the page is like in Chromium at WIDTH px: {"images": '1' per <img> that loaded with a
    non-zero natural width, '0' per broken one; "text": the length of its text; "overflow": how
    many px the document is wider than the window; "cpu": the length of the CPU row's value, -1
    without one}."""
    probe = tmp_path / "probe.html"
    probe.write_text((text if text is not None else page.read_text()).replace("</body>", PROBE))
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                        "--hide-scrollbars", f"--window-size={WIDTH},1600", "--dump-dom", probe.as_uri()],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r'data-images="([01]*)"', r.stdout)
    assert m, f"chromium did not run the probe: {r.stderr[-500:]}"
    number = {name: int(re.search(rf'data-{name}="(-?\d+)"', r.stdout).group(1)) for name in ("text", "overflow", "cpu")}
    return {"images": m.group(1), **number}


def loaded_images(browser, page, tmp_path):
    found = probe_page(browser, page, tmp_path)
    return found["images"], found["text"]


@pytest.fixture(scope="module")
def report_page(tmp_path_factory, finished_sweeps):
    from conftest import Study, make_build_tree
    tmp = tmp_path_factory.mktemp("html")
    study = Study(tmp, make_build_tree(tmp))
    directory = study.copy_of(finished_sweeps.get(steps=3, repetitions=2))
    r = study.perfstudy("report", directory, "--no-chart", "--formats", "png", timeout=180)
    assert r.returncode == 0, r.stderr
    return study.plots / directory.name / "report.html"


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


def test_report_opens_in_headless_chromium(report_page, tmp_path):
    browser = chromium()
    images, text_length = loaded_images(browser, report_page, tmp_path)
    assert images and set(images) == {"1"}, f"broken images: {images}"
    assert text_length > 500
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1200,1600", report_page.as_uri()], capture_output=True, timeout=120)
    import matplotlib.image
    pixels = matplotlib.image.imread(str(shot))
    assert pixels.std() > 0.02, "the screenshot is blank"
    # the probe can fail: a page with one corrupted figure is caught
    broken = tmp_path / "broken.html"
    text = report_page.read_text()
    start = text.index("data:image/png;base64,") + len("data:image/png;base64,")
    broken.write_text(text[:start] + "AAAA" + text[start + 4000:])
    images, _ = loaded_images(browser, broken, tmp_path)
    assert "0" in images


def test_report_fits_the_page_and_names_the_cpu(report_page, tmp_path):
    """No line, table or caption leaves the page at 1280 px (the document's scrollWidth is its
    clientWidth), and the CPU row shows meta.json's cpu.model."""
    browser = chromium()
    found = probe_page(browser, report_page, tmp_path)
    assert found["overflow"] == 0, f"the page is {found['overflow']} px wider than {WIDTH} px"
    assert found["cpu"] > 0, "the CPU row is empty or missing"
    # the check can fail: a line that cannot wrap makes the page wider
    text = report_page.read_text()
    wide = text.replace('<section id="machine">', '<p style="white-space:nowrap">' + "x" * 400 + '</p><section id="machine">')
    assert probe_page(browser, report_page, tmp_path, wide)["overflow"] > 0
