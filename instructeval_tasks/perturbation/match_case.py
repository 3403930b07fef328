"""Copy the letter case of one word onto another (HELM's ``match_case``).

Port of ``match_case`` from HELM ``src/helm/common/general.py`` (Stanford CRFM,
Apache-2.0). The contraction and misspelling steps use it to give a replacement
the case of the text it replaces.
"""

from __future__ import annotations

__all__ = ["match_case"]


def match_case(source_word: str, target_word: str) -> str:
    """Return ``target_word`` with the case of ``source_word``, HELM's rule.

    The rule, applied in this order:

    1. every character of ``source_word`` is ``islower()`` -> ``target_word.lower()``
       (an empty ``source_word`` passes this test, as ``all([])`` is true);
    2. every character is ``isupper()`` -> ``target_word.upper()``;
    3. the first character is ``isupper()`` -> ``target_word.capitalize()``;
    4. otherwise ``target_word`` unchanged.

    Spaces, apostrophes, hyphens and digits are neither lower nor upper case,
    so a source such as ``"is not"`` or ``"i'm"`` fails tests 1 and 2 and,
    unless it starts with a capital, returns ``target_word`` untouched.

    >>> match_case("already", "Alreayd")
    'alreayd'
    >>> match_case("NASA", "nasa")
    'NASA'
    >>> match_case("Already", "ALREAYD")
    'Alreayd'
    >>> match_case("is not", "ISN'T")
    "ISN'T"
    """
    if all(char.islower() for char in source_word):
        return target_word.lower()
    if all(char.isupper() for char in source_word):
        return target_word.upper()
    # ``source_word`` is non-empty here: the empty string returned at test 1.
    if source_word[0].isupper():
        return target_word.capitalize()
    return target_word
