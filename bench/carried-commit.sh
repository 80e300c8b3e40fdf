#!/bin/bash
# bench/carried-commit.sh: run first on a lent machine, in the repository root the device tool made
# there, after `bash bench/loan.sh --prepare` here (which carries the commit in .carry/; give carry
# [".carry"]). bench/loan.sh runs it itself; any other command there should start with
# `bash bench/carried-commit.sh && ...`, or its results record the wrong commit.
#
# Why: the tool sends the working tree with no .git, or with the .git of the session's first state
# (2026-11-27: a run at f78f79b recorded 18b4a91, dirty). The carried commit object makes provenance
# honest: the tree is staged and written as git objects; where it is the commit's own tree, the
# object hashes to that very commit, which becomes HEAD (its parents stay absent: rev-parse, status
# and diff, all that meta.json's commit and dirty flag need, do without them). A tree that is not
# that commit's gets no commit at all rather than a wrong one.
if ! command -v git >/dev/null || [ ! -f .carry/commit-object ]; then
    echo "git: no carried commit (.carry/commit-object; bench/loan.sh --prepare makes it)"
    exit 0
fi
if [ "$(git rev-parse HEAD 2>/dev/null)" != "$(cat .carry/COMMIT)" ]; then
    { [ -d .git ] || git init -q; } && echo /.carry/ >>.git/info/exclude && git add -A &&
        if [ "$(git write-tree)" = "$(sed -n 's/^tree //p' .carry/commit-object)" ]; then
            commit=$(git hash-object -t commit -w --stdin <.carry/commit-object) &&
                git update-ref HEAD "$commit" && git reset -q --mixed HEAD
        else
            echo "git: this tree is not commit $(cat .carry/COMMIT)'s (changes not committed before --prepare?)"
            git rm -rq --cached . >/dev/null
            git update-ref -d HEAD 2>/dev/null  # an older state's HEAD would be a wrong commit
        fi
fi
echo "git: HEAD $(git rev-parse --short HEAD 2>/dev/null || echo none), $(git status --porcelain 2>/dev/null | wc -l) changed paths"
