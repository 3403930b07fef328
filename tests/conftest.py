"""Shared fixtures: a tiny hand-written dataset for all nine tasks and a tiny offline causal LM.

Nothing here touches the network: the whole session runs with the HF offline switches set, the
data is written from the literals below, and the model is a randomly initialised 2-layer GPT-2
with a byte-level BPE tokenizer trained on the same literals.

The rows are short and deterministic so that the golden prompts in ``test_prompts.py`` can be
written out by hand. Row indices matter (the demo sampler returns train-row positions), so keep
the order of every list below stable; append new rows only at the end of a split, and expect the
goldens that depend on the sampled rows to change.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import pytest

OFFLINE_ENV = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def pytest_configure(config: pytest.Config) -> None:
    # Set before any test module imports datasets/transformers, which read these at import time.
    os.environ.update(OFFLINE_ENV)


# The budget validation's table of resolved statistics: the tests of what a budgeted report prints run
# against one that resolves every statistic (the CLI's subprocesses inherit it); the tests of
# abstention install their own (tests/aggregation/conftest.py: ``validated``), and those of the
# shipped table unset it.
VALIDITY_ENV = "INSTRUCTEVAL_BUDGET_VALIDITY"


@pytest.fixture(scope="session", autouse=True)
def _every_statistic_resolved(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("validity") / "budget_validity.json"
    from instructeval_aggregation.budget_validity import table_of

    path.write_text(json.dumps(table_of(lambda s, d, b: True)))
    before = os.environ.get(VALIDITY_ENV)
    os.environ[VALIDITY_ENV] = str(path)
    yield path
    if before is None:
        os.environ.pop(VALIDITY_ENV, None)
    else:
        os.environ[VALIDITY_ENV] = before


# --------------------------------------------------------------------------------------- the data
# One entry per local folder: {"train": [...], "eval": [...]}, rows in the HF field layout.

AG_NEWS = {
    "train": [
        {"text": "Ceasefire talks resume in Geneva.", "label": 0},
        {"text": "Home side wins the cup final.", "label": 1},
        {"text": "Oil prices climb on supply fears.", "label": 2},
        {"text": "New chip doubles battery life.", "label": 3},
        {"text": "Bank shares fall after rate rise.", "label": 2},
        {"text": "Probe lands on a distant comet.", "label": 3},
        {"text": "Election results delayed by recount.", "label": 0},
        {"text": "Sprinter breaks the world record.", "label": 1},
        {"text": "Retailer posts record holiday sales.", "label": 2},
        {"text": "Coach resigns after losing streak.", "label": 1},
        {"text": "Software update fixes security flaw.", "label": 3},
        {"text": "Flood relief reaches remote villages.", "label": 0},
    ],
    "eval": [
        {"text": "Fears for pension after talks.", "label": 2},
        {"text": "Envoys meet over border dispute.", "label": 0},
        {"text": "Goalkeeper saves late penalty.", "label": 1},
        {"text": "Telescope spots new exoplanet.", "label": 3},
        {"text": "Markets rally on jobs data.", "label": 2},
        {"text": "Summit ends without agreement.", "label": 0},
        {"text": "Rookie wins the marathon.", "label": 1},
        {"text": "Robot learns to fold laundry.", "label": 3},
    ],
}


def _anli(uid: str, premise: str, hypothesis: str, label: int) -> dict:
    return {"uid": uid, "premise": premise, "hypothesis": hypothesis, "label": label, "reason": ""}


ANLI = {
    "train": [
        _anli("t0", "A man is playing a guitar on stage.", "A man is making music.", 0),
        _anli("t1", "The cat sleeps on the warm mat.", "The cat is awake.", 2),
        _anli("t2", "Two kids run across the park.", "The kids are siblings.", 1),
        _anli("t3", "She bought apples at the market.", "She bought fruit.", 0),
        _anli("t4", "The train left the station at noon.", "The train was late.", 1),
        _anli("t5", "The store is closed on Sundays.", "The store is open every day.", 2),
        _anli("t6", "A dog chases a red ball.", "An animal is moving.", 0),
        _anli("t7", "The lake froze last winter.", "It was cold last winter.", 0),
        _anli("t8", "He wrote a letter to his aunt.", "His aunt lives abroad.", 1),
        _anli("t9", "The road is dry and empty.", "The road is flooded.", 2),
        _anli("t10", "A chef cooks pasta for dinner.", "The chef is famous.", 1),
        _anli("t11", "The lights are switched off.", "The room is brightly lit.", 2),
    ],
    "eval": [
        _anli("e0", "A woman reads a book in the garden.", "A woman is outdoors.", 0),
        _anli("e1", "The bus is full of tourists.", "The bus is empty.", 2),
        _anli("e2", "A boy paints a fence.", "The boy is paid for the work.", 1),
        _anli("e3", "Snow covers the mountain top.", "The mountain is snowy.", 0),
        _anli("e4", "The bakery sells fresh bread.", "The bakery opened last year.", 1),
        _anli("e5", "The glass is full of water.", "The glass is empty.", 2),
        _anli("e6", "Birds sing at dawn.", "Birds make sounds in the morning.", 0),
        _anli("e7", "The museum is free on Mondays.", "The museum charges on Mondays.", 2),
    ],
}


def _boolq(question: str, answer: bool, passage: str) -> dict:
    return {"question": question, "answer": answer, "passage": passage}


BOOLQ = {
    "train": [
        _boolq("is the sun a star", True, "The Sun is the star at the centre of the Solar System."),
        _boolq("is a whale a fish", False, "Whales are marine mammals that breathe air."),
        _boolq("can penguins fly", False, "Penguins are flightless birds that swim well."),
        _boolq("is water made of hydrogen and oxygen", True, "A water molecule has two hydrogen atoms and one oxygen atom."),
        _boolq("is mount everest in africa", False, "Mount Everest lies in the Himalayas between Nepal and China."),
        _boolq("do bees make honey", True, "Honey bees store nectar as honey in their hives."),
        _boolq("is the moon larger than the earth", False, "The Moon is about a quarter of the diameter of the Earth."),
        _boolq("is paris the capital of france", True, "Paris is the capital and largest city of France."),
        _boolq("is gold a metal", True, "Gold is a dense, soft, yellow metal."),
        _boolq("does ice sink in water", False, "Ice is less dense than liquid water and floats."),
        _boolq("is a tomato a fruit", True, "Botanically, the tomato is a berry of the nightshade plant."),
        _boolq("is the pacific the smallest ocean", False, "The Pacific is the largest and deepest ocean on Earth."),
    ],
    "eval": [
        _boolq("is the nile a river", True, "The Nile is a major river in north-east Africa."),
        _boolq("is iron a gas", False, "Iron is a metal that is solid at room temperature."),
        _boolq("do spiders have six legs", False, "Spiders have eight legs and two body parts."),
        _boolq("is venus a planet", True, "Venus is the second planet from the Sun."),
        _boolq("is rome in spain", False, "Rome is the capital city of Italy."),
        _boolq("can cats see in low light", True, "Cats see well in dim light."),
        _boolq("is salt sweet", False, "Table salt tastes salty, not sweet."),
        _boolq("is english spoken in canada", True, "English and French are official languages of Canada."),
    ],
}

IMDB = {
    "train": [
        {"text": "A dull plot and wooden acting.", "label": 0},
        {"text": "A warm, funny and moving film.", "label": 1},
        {"text": "I loved every minute of it.<br /><br />Great cast.", "label": 1},
        {"text": "Two hours I will never get back.", "label": 0},
        {"text": "The ending made the whole film worth it.", "label": 1},
        {"text": "Boring, slow and far too long.", "label": 0},
        {"text": "A clever script with sharp dialogue.", "label": 1},
        {"text": "The worst sequel of the year.", "label": 0},
        {"text": "Beautifully shot and well acted.", "label": 1},
        {"text": "The jokes fall flat every time.", "label": 0},
        {"text": "A charming story for the whole family.", "label": 1},
        {"text": "I walked out after an hour.", "label": 0},
    ],
    "eval": [
        {"text": "An instant classic.", "label": 1},
        {"text": "Painfully bad from start to finish.", "label": 0},
        {"text": "Great music and a great cast.", "label": 1},
        {"text": "A mess of a movie.<br />Skip it.", "label": 0},
        {"text": "Touching and honest.", "label": 1},
        {"text": "Not even the actors look interested.", "label": 0},
        {"text": "I would watch it again tomorrow.", "label": 1},
        {"text": "Predictable and dull.", "label": 0},
    ],
}

EMOTION = {
    "train": [
        {"text": "stuck in traffic again, so annoyed #angry", "label": 0},
        {"text": "best day ever at the beach!", "label": 1},
        {"text": "tomorrow will be better, keep going", "label": 2},
        {"text": "miss my grandma so much today", "label": 3},
        {"text": "why does my phone keep crashing #furious", "label": 0},
        {"text": "my team won the final!!", "label": 1},
        {"text": "lost my keys and my wallet, feeling low", "label": 3},
        {"text": "every setback is a setup for a comeback", "label": 2},
        {"text": "so happy to see old friends tonight", "label": 1},
        {"text": "they cancelled my flight without notice #rage", "label": 0},
        {"text": "hard work pays off, never give up", "label": 2},
        {"text": "rainy sunday alone, nothing to do", "label": 3},
    ],
    "eval": [
        {"text": "@user that referee was a joke #angry", "label": 0},
        {"text": "new puppy at home!", "label": 1},
        {"text": "one step at a time, we'll get there", "label": 2},
        {"text": "can't stop crying after that ending", "label": 3},
        {"text": "the neighbours are drilling at 6am", "label": 0},
        {"text": "just got the job offer!!", "label": 1},
        {"text": "believe in yourself #motivation", "label": 2},
        {"text": "feeling lonely tonight", "label": 3},
    ],
}


def _cosmos(uid: str, context: str, question: str, answers: list[str], label: int) -> dict:
    row = {"id": uid, "context": context, "question": question}
    row.update({f"answer{i}": a for i, a in enumerate(answers)})
    row["label"] = label
    return row


COSMOS_QA = {
    "train": [
        _cosmos("c0", "I missed the bus , so I walked to work in the rain .", "Why did I walk to work ?",
                ["I like rain .", "I missed the bus .", "My car was new .", "None of the above choices ."], 1),
        _cosmos("c1", "We baked a cake for mom 's birthday and hid it in the garage .", "Why was the cake hidden ?",
                ["It was a surprise .", "It was burnt .", "The kitchen was full .", "None of the above choices ."], 0),
        _cosmos("c2", "The power went out during the storm , so we lit candles .", "What happened during the storm ?",
                ["We went swimming .", "The TV got louder .", "None of the above choices .", "The power went out ."], 3),
        _cosmos("c3", "My sister finally passed her driving test on the third try .", "How does my sister probably feel ?",
                ["Angry .", "Bored .", "Relieved and happy .", "None of the above choices ."], 2),
        _cosmos("c4", "I forgot my umbrella and got soaked on the way home .", "What was the weather like ?",
                ["It was raining .", "It was sunny .", "It was snowing .", "None of the above choices ."], 0),
        _cosmos("c5", "The dog barked all night , so nobody slept well .", "Why was everyone tired ?",
                ["They ran a race .", "The dog kept them awake .", "They ate too much .", "None of the above choices ."], 1),
        _cosmos("c6", "He studied every evening for a month before the exam .", "What may happen next ?",
                ["He skips the exam .", "He forgets his name .", "None of the above choices .", "He passes the exam ."], 3),
        _cosmos("c7", "We moved to a new city and I had to change schools .", "What may be true about me ?",
                ["I never moved .", "I stayed at my school .", "I am a new student .", "None of the above choices ."], 2),
        _cosmos("c8", "The shop ran out of milk before I got there .", "Why did I come home without milk ?",
                ["The shop had none left .", "I do not drink milk .", "I lost my money .", "None of the above choices ."], 0),
        _cosmos("c9", "My phone battery died in the middle of the call .", "Why did the call end ?",
                ["The friend hung up .", "The phone ran out of power .", "The call was too long .", "None of the above choices ."], 1),
        _cosmos("c10", "She planted tomatoes in spring and picked them in summer .", "What did she do in summer ?",
                ["She planted seeds .", "She sold her house .", "She picked tomatoes .", "None of the above choices ."], 2),
        _cosmos("c11", "The concert was cancelled because the singer was ill .", "Why was the concert cancelled ?",
                ["The hall was flooded .", "Nobody bought tickets .", "None of the above choices .", "The singer was sick ."], 3),
    ],
    "eval": [
        _cosmos("d0", "I lost my keys and had to wait outside for an hour .", "Why did I wait outside ?",
                ["I could not get in .", "I liked the weather .", "I was early .", "None of the above choices ."], 0),
        _cosmos("d1", "The team trained hard all season and won the cup .", "What may explain the win ?",
                ["Luck only .", "Their hard training .", "The other team left .", "None of the above choices ."], 1),
        _cosmos("d2", "My brother cooked dinner for the first time last night .", "What did my brother do ?",
                ["He ate out .", "He slept early .", "He made dinner .", "None of the above choices ."], 2),
        _cosmos("d3", "It snowed so much that school was closed .", "Why was school closed ?",
                ["A holiday .", "A fire .", "A strike .", "Heavy snow ."], 3),
        _cosmos("d4", "I bought a new bike and rode it to the lake .", "How did I get to the lake ?",
                ["By bike .", "By bus .", "On foot .", "None of the above choices ."], 0),
        _cosmos("d5", "The baby smiled when grandpa sang a song .", "Why did the baby smile ?",
                ["She was hungry .", "Grandpa sang to her .", "She was tired .", "None of the above choices ."], 1),
        _cosmos("d6", "We got lost because the map was old .", "Why did we get lost ?",
                ["We had no car .", "It was dark .", "The map was out of date .", "None of the above choices ."], 2),
        _cosmos("d7", "He watered the plants every day while I was away .", "Who cared for the plants ?",
                ["Nobody .", "The rain .", "Me .", "He did ."], 3),
    ],
}


def _swag(ind: int, activity: str, ctx_a: str, ctx_b: str, endings: list[str], label: str) -> dict:
    ctx = f"{ctx_a} {ctx_b}" if ctx_b else ctx_a
    return {"ind": ind, "activity_label": activity, "ctx_a": ctx_a, "ctx_b": ctx_b, "ctx": ctx,
            "endings": endings, "label": label}


HELLASWAG = {
    "train": [
        _swag(0, "Washing dishes", "A man fills the sink with water.", "he",
              ["adds soap and washes the plates.", "jumps into the sink.", "paints the wall.", "sings to the dog."], "0"),
        _swag(1, "Running", "A woman ties her shoes at the track.", "she",
              ["eats a sandwich.", "starts running around the track.", "reads a book.", "falls asleep."], "1"),
        _swag(2, "Making tea", "[header] How to make tea [title] Boil the water.", "",
              ["[step] Throw the kettle away.", "[step] Paint the cup.", "[step] Pour it over a tea bag.", "[step] Freeze it."], "2"),
        _swag(3, "Mowing the lawn", "A man pushes a mower across the grass.", "the grass",
              ["turns blue.", "starts to sing.", "grows taller.", "is cut short behind him."], "3"),
        _swag(4, "Skiing", "A skier stands at the top of the slope.", "she",
              ["skis down the hill.", "climbs a tree.", "opens an umbrella.", "bakes bread."], "0"),
        _swag(5, "Painting", "A boy dips a brush in red paint.", "he",
              ["drinks the paint.", "paints a stripe on the fence.", "throws the fence away.", "goes swimming."], "1"),
        _swag(6, "Playing guitar", "A girl holds a guitar on her lap.", "she",
              ["eats the guitar.", "sleeps on it.", "strums a few chords.", "mails it."], "2"),
        _swag(7, "Cooking", "A chef cracks two eggs into a pan.", "the eggs",
              ["fly away.", "turn into stone.", "melt the pan.", "sizzle in the oil."], "3"),
        _swag(8, "Swimming", "A swimmer dives into the pool.", "he",
              ["swims to the other end.", "climbs a ladder to the roof.", "reads a map.", "plants a tree."], "0"),
        _swag(9, "Cycling", "A man gets on his bike.", "he",
              ["bakes a pie.", "pedals down the road.", "knits a hat.", "calls a plumber."], "1"),
        _swag(10, "Brushing teeth", "A kid squeezes toothpaste onto a brush.", "he",
              ["plants the brush.", "eats the tube.", "brushes his teeth.", "paints the mirror."], "2"),
        _swag(11, "Walking the dog", "A woman clips a leash to her dog.", "they",
              ["fly a kite.", "swim across a lake.", "build a house.", "walk down the street."], "3"),
    ],
    "eval": [
        _swag(20, "Washing a car", "A man sprays the car with a hose.", "he",
              ["scrubs it with a sponge.", "eats the hose.", "paints the road.", "sleeps in the trunk."], "0"),
        _swag(21, "Baking", "A woman rolls out the dough.", "she",
              ["throws it at the cat.", "cuts it into cookies.", "wears it as a hat.", "mails it."], "1"),
        _swag(22, "Tennis", "Two players stand on a tennis court.", "they",
              ["go to sleep.", "build a fire.", "hit the ball back and forth.", "swim."], "2"),
        _swag(23, "Shaving", "[header] How to shave [title] Wet your face.", "",
              ["[step] Eat the razor.", "[step] Go outside.", "[step] Call a friend.", "[step] Apply shaving cream."], "3"),
        _swag(24, "Fishing", "A man casts a line into the lake.", "he",
              ["waits for a bite.", "drinks the lake.", "flies away.", "paints the fish."], "0"),
        _swag(25, "Knitting", "A grandmother picks up her needles.", "she",
              ["throws them away.", "knits a row of the scarf.", "eats them.", "plants them."], "1"),
        _swag(26, "Climbing", "A climber grips the rock wall.", "she",
              ["falls asleep.", "sings loudly.", "pulls herself up.", "bakes a cake."], "2"),
        _swag(27, "Sweeping", "A janitor picks up a broom.", "he",
              ["rides it.", "breaks it.", "hides it.", "sweeps the floor."], "3"),
    ],
}

NQ_OPEN = {
    "train": [
        {"question": "what is the capital of france", "answer": ["Paris"]},
        {"question": "who wrote hamlet", "answer": ["William Shakespeare", "Shakespeare"]},
        {"question": "how many legs does a spider have", "answer": ["eight", "8"]},
        {"question": "what is the largest planet", "answer": ["Jupiter"]},
        {"question": "who painted the mona lisa", "answer": ["Leonardo da Vinci", "da Vinci"]},
        {"question": "what is the boiling point of water in celsius", "answer": ["100"]},
        {"question": "what gas do plants absorb", "answer": ["carbon dioxide", "CO2"]},
        {"question": "who was the first man on the moon", "answer": ["Neil Armstrong"]},
        {"question": "what is the longest river in africa", "answer": ["the Nile", "Nile"]},
        {"question": "what language is spoken in brazil", "answer": ["Portuguese"]},
        {"question": "how many days are in a leap year", "answer": ["366"]},
        {"question": "what is the chemical symbol for gold", "answer": ["Au"]},
    ],
    "eval": [
        {"question": "where did they film hot tub time machine", "answer": ["Fernie Alpine Resort"]},
        {"question": "who invented the telephone", "answer": ["Alexander Graham Bell", "Bell"]},
        {"question": "what is the capital of japan", "answer": ["Tokyo"]},
        {"question": "how many continents are there", "answer": ["seven", "7"]},
        {"question": "who discovered penicillin", "answer": ["Alexander Fleming"]},
        {"question": "what is the smallest prime number", "answer": ["2", "two"]},
        {"question": "what colour is the sky on a clear day", "answer": ["blue"]},
        {"question": "what is the freezing point of water in fahrenheit", "answer": ["32"]},
    ],
}


def _trivia(question: str, aliases: list[str]) -> dict:
    return {
        "question": question,
        "answer": {
            "value": aliases[0],
            "aliases": aliases,
            "normalized_aliases": sorted({a.lower() for a in aliases}),
            "normalized_value": aliases[0].lower(),
        },
    }


TRIVIA_QA = {
    "train": [
        _trivia("Which planet is known as the Red Planet?", ["Mars", "The Red Planet"]),
        _trivia("In which city is the Eiffel Tower?", ["Paris", "Paris, France"]),
        _trivia("Who wrote Pride and Prejudice?", ["Jane Austen", "Austen"]),
        _trivia("What is the hardest natural substance?", ["Diamond", "Diamonds"]),
        _trivia("Which ocean lies between Europe and America?", ["Atlantic", "Atlantic Ocean"]),
        _trivia("What is the largest mammal?", ["Blue whale", "Blue whales"]),
        _trivia("Which airport serves Chicago?", ["O'Hare", "O'Hare International Airport"]),
        _trivia("What is the currency of Japan?", ["Yen", "Japanese yen"]),
        _trivia("Who composed the Four Seasons?", ["Vivaldi", "Antonio Vivaldi"]),
        _trivia("What is the capital of Australia?", ["Canberra"]),
        _trivia("Which metal is liquid at room temperature?", ["Mercury", "Hg"]),
        _trivia("How many sides has a hexagon?", ["Six", "6"]),
    ],
    "eval": [
        _trivia("In which city were Rotary Clubs set up in 1905?", ["Chicago", "Chicago, Illinois"]),
        _trivia("Who painted The Starry Night?", ["Van Gogh", "Vincent van Gogh"]),
        _trivia("What is the capital of Canada?", ["Ottawa"]),
        _trivia("Which element has the symbol O?", ["Oxygen"]),
        _trivia("Who wrote Macbeth?", ["Shakespeare", "William Shakespeare"]),
        _trivia("What is the tallest animal?", ["Giraffe", "Giraffes"]),
        _trivia("Which country hosted the 2008 Olympics?", ["China", "People's Republic of China"]),
        _trivia("What is the square root of 81?", ["Nine", "9"]),
    ],
}

TINY_DATA: dict[str, dict[str, list[dict]]] = {
    "ag_news": AG_NEWS,
    "anli": ANLI,
    "boolq": BOOLQ,
    "imdb": IMDB,
    "tweet_eval_emotion": EMOTION,
    "cosmos_qa": COSMOS_QA,
    "hellaswag": HELLASWAG,
    "nq_open": NQ_OPEN,
    "trivia_qa": TRIVIA_QA,
}

# The verbalizers of protocol.md §2.3, written out independently of the templates.
VERBALIZERS = {
    "agnews": ["World", "Sports", "Business", "Sci/Tech"],
    "anli": ["Entail", "Neutral", "Contradict"],
    "boolq": ["False", "True"],
    "imdb": ["Negative", "Positive"],
    "emotion": ["Anger", "Joy", "Optimism", "Sadness"],
}
FIELD_NAMES = ["News", "Category", "Premise", "Hypothesis", "Relation", "Passage", "Question", "Answer",
               "Review", "Sentiment", "Tweet", "Emotion", "Sentence"]


def write_tiny_data(root: Path) -> Path:
    """Write ``TINY_DATA`` as ``<root>/<local_dir>/{train,eval}.jsonl``; return ``root``."""
    for local_dir, splits in TINY_DATA.items():
        folder = root / local_dir
        folder.mkdir(parents=True, exist_ok=True)
        for split, rows in splits.items():
            with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return root


@pytest.fixture(scope="session")
def tiny_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory in the plugin's local layout, holding the hand-written rows above."""
    return write_tiny_data(tmp_path_factory.mktemp("tiny_data"))


@pytest.fixture(scope="session")
def tiny_rows() -> dict[str, dict[str, list[dict]]]:
    """The rows of ``tiny_data_dir`` as Python objects: ``{local_dir: {"train": [...], "eval": [...]}}``.

    (Test modules take the rows from this fixture rather than ``import conftest``: another
    ``conftest`` module below ``tests/`` would shadow that import.)
    """
    return copy.deepcopy(TINY_DATA)


@pytest.fixture
def tiny_data_copy(tmp_path: Path) -> Path:
    """A fresh, writable copy of the tiny data directory, for tests that edit a split."""
    return write_tiny_data(tmp_path / "tiny_data_copy")


# --------------------------------------------------------------------------------------- the model

def _tokenizer_corpus() -> list[str]:
    # Field names and verbalizers are repeated so that BPE learns them as whole tokens, as a real
    # tokenizer has them (" World" is one token, " Sci/Tech" several).
    lines: list[str] = [f"{name}: x" for name in FIELD_NAMES] * 20
    for words in VERBALIZERS.values():
        lines += [f"Category: {w}" for w in words] * 20
    lines += ["Solve the following task:", "Find the answer below:", "Complete the problem.",
              "Find the best solution to the question below:", "Complete the question below:"]
    for splits in TINY_DATA.values():
        for rows in splits.values():
            for row in rows:
                lines.append(json.dumps(row, ensure_ascii=False))
                lines += [v for v in row.values() if isinstance(v, str)]
    return lines


def build_tiny_model(out_dir: Path) -> Path:
    """Save a 2-layer GPT-2 (random weights, seed 0) and a byte-level BPE tokenizer to ``out_dir``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    eos, pad = "<|endoftext|>", "<pad>"
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=[eos, pad],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_tokenizer_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token=eos, eos_token=eos, unk_token=eos, pad_token=pad
    )
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_layer=2,
        n_embd=64,
        n_head=2,
        n_positions=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    model.eval()
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An offline tiny causal LM that ``lm_eval --model hf --model_args pretrained=<dir>`` loads."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"))


CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="session")
def tiny_chat_model(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with a chat template (system, user and assistant turns: ``<|role|>...<|end|>``)."""
    out = tmp_path_factory.mktemp("tiny_chat") / "tiny_chat"
    shutil.copytree(tiny_model_dir, out)
    config = json.loads((out / "tokenizer_config.json").read_text())
    config["chat_template"] = CHAT_TEMPLATE
    (out / "tokenizer_config.json").write_text(json.dumps(config))
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


# --------------------------------------------------------------------------------------- shared data

@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The project's real sample data at ``../shared/data``; skips the test when it is absent."""
    path = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"shared sample data not found at {path}")
    return path


@pytest.fixture(scope="session")
def scripted_lm():
    """A harness LM class for tests: ``ScriptedLM(reply)``'s ``generate_until`` answers
    ``reply(context)`` and records every context (``contexts``) and its generation kwargs
    (``gen_kwargs``); it scores no log-likelihoods."""
    from lm_eval.api.model import LM

    class ScriptedLM(LM):
        def __init__(self, reply) -> None:
            super().__init__()
            self.reply = reply
            self.contexts: list[str] = []
            self.gen_kwargs: list[dict] = []

        def generate_until(self, requests, disable_tqdm: bool = False):
            out = []
            for req in requests:
                context, kwargs = req.args
                self.contexts.append(context)
                self.gen_kwargs.append(dict(kwargs))
                out.append(self.reply(context))
            return out

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

    return ScriptedLM
