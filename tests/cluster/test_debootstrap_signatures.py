"""Every debootstrap the project runs checks the suite's signature: ``--force-check-gpg``
with Debian's archive keyring, so a mirror (or anyone on the way to it, the default
mirror is plain http) cannot hand the stand-in images other packages.

Without ``--force-check-gpg``, debootstrap skips the check when it finds no keyring
(and says so only in its log). The scripts are read, not run: each debootstrap command
line under hack/ (continuation lines joined) must carry both options.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

HACK = Path(__file__).resolve().parents[2] / "hack"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
#: The scripts that make a Debian root; each must be found to call debootstrap.
MAKERS = ("image/base.sh",)


#: What may stand before a command's name: shell keywords and commands that run another.
PREFIXES = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}"})
PREFIXES |= {"exec", "sudo", "env", "time", "nice", "command", "unshare", "chroot"}


def separates(token: str) -> bool:
    """Whether a token ends one simple command (``;``, ``&&``, ``|``, ``$(``, ``)``...)."""
    punctuation = re.fullmatch(r"\$?[();|&<>]+", token) is not None
    return punctuation and (re.search(r"[();|]", token) is not None or token in ("&", "&&"))


def commands(script: Path) -> list[list[str]]:
    """The script's simple commands as words, comments dropped, continuations joined;
    what runs another command (``if``, ``exec``, ``VAR=value``) is dropped from the front.
    """
    text = re.sub(r"\\\n", " ", script.read_text())
    found = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # a line inside a multi-line string: not a command of its own
            continue
        words: list[str] = []
        for token in [*tokens, ";"]:
            if not separates(token):
                words.append(token)
                continue
            while words and (
                words[0] in PREFIXES or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0])
            ):
                words = words[1:]
            if words:
                found.append(words)
            words = []
    return found


def assignments(script: Path) -> dict[str, str]:
    """The script's plain ``NAME=value`` lines (no expansion in the value)."""
    found = {}
    for line in script.read_text().splitlines():
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=([^$`;&|<>()\s]+)", line.strip())
        if match:
            found[match[1]] = match[2]
    return found


def debootstraps(script: Path) -> list[list[str]]:
    """Each debootstrap command line, with the script's plain variables expanded."""
    values = assignments(script)

    def expand(word: str) -> str:
        return re.sub(r"\$\{(\w+)\}", lambda m: values.get(m[1], m[0]), word)

    return [
        [expand(w) for w in words] for words in commands(script) if words[0].endswith("debootstrap")
    ]


def scripts() -> list[Path]:
    return sorted(p for p in HACK.rglob("*") if p.is_file() and p.suffix in ("", ".sh"))


@pytest.mark.parametrize("name", [pytest.param(m, id=m) for m in MAKERS])
def test_makers_call_debootstrap(name: str) -> None:
    found = debootstraps(HACK / name)

    assert found, f"expected hack/{name} to run debootstrap (else this test checks nothing)"


@pytest.mark.parametrize(
    "script", [pytest.param(s, id=str(s.relative_to(HACK))) for s in scripts()]
)
def test_every_debootstrap_checks_signatures(script: Path) -> None:
    for words in debootstraps(script):
        line = shlex.join(words)
        assert "--force-check-gpg" in words, (
            f"expected --force-check-gpg in hack/{script.relative_to(HACK)}, saw: {line}"
        )
        assert f"--keyring={KEYRING}" in words, (
            f"expected --keyring={KEYRING} in hack/{script.relative_to(HACK)}, saw: {line}"
        )
        assert "--no-check-gpg" not in words, f"expected no --no-check-gpg, saw: {line}"
