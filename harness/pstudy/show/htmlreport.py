"""The report page, owned here: plots/<results name>/report.html, one self-contained HTML file
(every figure embedded as a data URI, no network access) rendered from
pstudy/templates/report.html.j2 with jinja2 (Debian: python3-jinja2)."""

import base64
from pathlib import Path

from pstudy.store import resultsdir
from pstudy.errors import StudyError

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE = "report.html.j2"
MIME = {".png": "image/png", ".svg": "image/svg+xml"}


def data_uri(path):
    path = Path(path)
    return f"data:{MIME[path.suffix]};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def figure(path, alt=None):
    """{"uri", "alt"} of an image file, for the template."""
    return {"uri": data_uri(path), "alt": alt or Path(path).stem}


def render(context):
    try:
        import jinja2
    except ImportError:
        raise StudyError("report.html: jinja2 is not installed (Debian: apt-get install python3-jinja2)") from None
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)
    return env.get_template(TEMPLATE).render(**context)


def write(outdir, context):
    path = Path(outdir) / resultsdir.REPORT_HTML
    resultsdir.atomic_write(path, render(context))
    return path
