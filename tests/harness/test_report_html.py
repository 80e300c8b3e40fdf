"""report.html: self-contained, and every figure loads in headless Chromium (Debian's chromium,
installed by scripts/install-deps.sh); the page is not blank."""

import re
import shutil
import subprocess

import pytest

PROBE = ('<script>window.addEventListener("load",()=>{const s=[...document.images].map('
         'i=>i.complete&&i.naturalWidth>0?1:0);document.body.setAttribute("data-images",s.join(""));'
         'document.body.setAttribute("data-text",document.body.innerText.length)});</script></body>')


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium is not installed (scripts/install-deps.sh installs Debian's chromium)")


def loaded_images(browser, page, tmp_path):
    """'1' per <img> of the page that loaded with a non-zero natural width, '0' per broken one."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE))
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                        "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'data-images="([01]*)"', r.stdout)
    assert m, f"chromium did not run the probe: {r.stderr[-500:]}"
    return m.group(1), int(re.search(r'data-text="(\d+)"', r.stdout).group(1))


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    from conftest import Study, make_build_tree
    tmp = tmp_path_factory.mktemp("html")
    study = Study(tmp, make_build_tree(tmp))
    r = study.perfstudy("run", study.config(repetitions=2, steps=3))
    assert r.returncode == 0, r.stderr
    directory = study.result_dirs()[0]
    r = study.perfstudy("report", directory, "--no-chart", "--formats", "png", timeout=180)
    assert r.returncode == 0, r.stderr
    return study.plots / directory.name / "report.html"


def test_report_is_self_contained(report_page):
    text = report_page.read_text()
    sources = re.findall(r'<img src="([^"]*)"', text)
    assert len(sources) >= 6  # speedup/efficiency figures, factors, traffic light, timelines
    assert all(s.startswith("data:image/") for s in sources)
    assert not re.search(r'(src|href)="(https?:|//)', text)
    for section in ("identity", "summary", "efficiency", "timelines", "roofline", "failures"):
        assert f'id="{section}"' in text
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
