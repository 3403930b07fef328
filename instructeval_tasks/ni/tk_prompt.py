r"""Tk-Instruct's prompt, byte for byte: the string ``DataCollatorForNI`` builds (``prompt_format=tk-instruct``).

Super-NaturalInstructions' reference models (Tk-Instruct; repository ``yizhongw/Tk-Instruct``,
``src/ni_collator.py``, ``DataCollatorForNI.__call__`` with ``add_task_name=False``, as in its
evaluation scripts) see each instance as

    source = definition + "".join(positive examples) + "".join(negative examples) + test block

built by five rules that the project's own layout (``prompt.render_header``, ``prompt_format=schema``)
does not follow:

1. the test block is ``"Now complete the following example -\nInput: " + input.strip()``, a period
   where it does not end in punctuation, then ``"\nOutput: "``;
2. each example starts ``" Positive Example {n} -\n"`` (``Negative``), and its ``Output:`` and
   ``Explanation:`` lines start with a space;
3. a period is added where the definition, an example's input, output or explanation, or the test
   input does not end in ``string.punctuation``;
4. the prompt ends with ``"Output: "`` (a trailing space);
5. the inputs are stripped (the definition, the examples' fields too).

The definition is ``"Definition: " + Definition[0].strip()`` (period rule) ``+ "\n\n"``; an example is
``" Positive Example {n} -\nInput: {input}[.]\n Output: {output}[.]\n"`` plus, with explanations and
where the example has the field, ``" Explanation: {explanation}[.]\n"``, then ``"\n"``. The examples
are the file's own list (``TaskFile.raw_examples``: an example whose input is the benchmark's ``-``
marker is kept, as the collator keeps it).

**Length.** An example is added only while ``len(tokenize(definition + " ".join(added) + example +
test block)) <= max_source_length`` (1,024 in Tk-Instruct's scripts; the ``" ".join`` is the
collator's own, though the prompt joins with ``""``); the first one that does not fit ends the list
(and the negatives are measured with the positives kept). A source still longer than
``max_source_length`` tokens is cut to its first ``max_source_length`` tokens and decoded, as the
collator does. ``tokenize`` is the evaluated model's tokenizer (``len(tokenizer(text)["input_ids"])``,
special tokens included as that tokenizer adds them); Tk-Instruct counted with T5's SentencePiece
tokenizer, which splits English into a similar number of pieces but not the same, so an example near
the limit can be kept by one and dropped by the other.

Example:
    >>> from instructeval_tasks.ni.source import TaskFile
    >>> tf = TaskFile("t.json", "Answer yes or no", ({"input": "Is ice cold?", "output": "yes", "explanation": "It is"},),
    ...               (), (), ())
    >>> tk_instruct_prompt(tf, "definition_pos2", " Is fire cold ", TokenCounter(str.split))
    'Definition: Answer yes or no.\n\n Positive Example 1 -\nInput: Is ice cold?\n Output: yes.\n\nNow complete the following example -\nInput: Is fire cold.\nOutput: '
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Callable

from ..encodings import NI_ENCODINGS
from .source import TaskFile

MAX_SOURCE_LENGTH = 1024  # Tk-Instruct's evaluation scripts' --max_source_length
FORMATS = ("schema", "tk-instruct")


@dataclass(frozen=True)
class TokenCounter:
    """How the length rule counts and cuts: ``split(text)`` gives the token list (``len`` counted),
    ``join(tokens)`` decodes a cut one (None: ``" ".join``)."""

    split: Callable[[str], list]
    join: Callable[[list], str] | None = None

    @classmethod
    def of(cls, tokenizer) -> "TokenCounter":
        """The counter of a Hugging Face tokenizer, as the collator calls it."""
        return cls(lambda text: tokenizer(text)["input_ids"],
                   lambda ids: tokenizer.decode(ids, skip_special_tokens=True))

    def count(self, text: str) -> int:
        return len(self.split(text))

    def cut(self, text: str, n: int) -> str:
        tokens = self.split(text)[:n]
        return self.join(tokens) if self.join is not None else " ".join(tokens)


def _period(text: str) -> str:
    return text if text and text[-1] in string.punctuation else text + "."


def instance_block(doc_input: str) -> str:
    """Rule 1: the instance's block, ending in ``"Output: "``."""
    return "Now complete the following example -\n" + _period(f"Input: {doc_input.strip()}") + "\nOutput: "


def _example(label: str, n: int, example: dict, explanation: bool) -> str:
    text = f" {label} Example {n} -\n" + _period(f"Input: {example['input'].strip()}") + "\n"
    text += _period(f" Output: {example['output'].strip()}") + "\n"
    if explanation and "explanation" in example:
        text += _period(f" Explanation: {example['explanation'].strip()}") + "\n"
    return text + "\n"


def tk_instruct_prompt(task_file: TaskFile | None, encoding: str | None, doc_input: str, counter: TokenCounter, *,
                       max_source_length: int = MAX_SOURCE_LENGTH) -> str:
    """The collator's source for one instance (module doc): ``encoding`` one of ``NI_ENCODINGS`` (None:
    no instruction, the test block alone)."""
    block = instance_block(doc_input)
    definition, pos, neg = "", [], []
    if encoding is not None:
        components, n_pos, n_neg, explanation = NI_ENCODINGS[encoding]
        if "definition" in components:
            definition = _period("Definition: " + task_file.definition.strip()) + "\n\n"
        positives, negatives = task_file.raw_examples or (task_file.positive_examples, task_file.negative_examples)
        for n, example in enumerate(positives[:n_pos] if "positive_examples" in components else [], 1):
            text = _example("Positive", n, example, explanation)
            if counter.count(definition + " ".join(pos) + text + block) > max_source_length:
                break
            pos.append(text)
        for n, example in enumerate(negatives[:n_neg] if "negative_examples" in components else [], 1):
            text = _example("Negative", n, example, explanation)
            if counter.count(definition + " ".join(pos) + " ".join(neg) + text + block) > max_source_length:
                break
            neg.append(text)
    source = definition + "".join(pos) + "".join(neg) + block
    return source if counter.count(source) <= max_source_length else counter.cut(source, max_source_length)
