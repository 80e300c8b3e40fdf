"""The note under a figure (its bases, intervals and sources), wrapped to the figure's width: a
line drawn at one size runs off the right edge of a narrower figure, and the page shows it cut."""

import textwrap

# DejaVu Sans, matplotlib's default face: its widest lower-case text averages under 0.6 em a character
EM_PER_CHAR = 0.6
LINE_SPACING = 1.25  # matplotlib's default line height, in em


def caption(fig, text, fontsize=7):
    """Write `text` at the figure's bottom left, each line wrapped to the figure's width; returns
    the fraction of the figure's height it takes, for tight_layout's rect."""
    chars = max(20, int((fig.get_figwidth() * 72 - 2 * fontsize) / (fontsize * EM_PER_CHAR)))
    lines = [wrapped for line in text.split("\n") for wrapped in (textwrap.wrap(line, chars) or [""])]
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=fontsize, va="bottom", ha="left")
    return 0.015 + len(lines) * fontsize * LINE_SPACING / 72 / fig.get_figheight()
