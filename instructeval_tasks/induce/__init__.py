"""Instruction induction: the automatic selection methods that compute a bank for a model.

- :mod:`.common`: task views over the train split, seeded slices, candidate pools, bank writing;
- :mod:`.perplexity`: Low Perplexity (SPELL), the pool entries with the lowest perplexity, and its bank;
- :mod:`.ape`: APE with Honovich et al.'s instruction-induction prompt, cleanup, selection, and its bank;
- :mod:`.execution`: execution accuracy of any instruction on a train slice (APE's ranking measure);
- :mod:`.rlprompt_policy`, :mod:`.rlprompt_reward`, :mod:`.rlprompt_sql`, :mod:`.rlprompt_train`,
  :mod:`.rlprompt_bank`: RLPrompt -- the policy (frozen LM + MLP adaptor), the gap reward with its
  z-score, the soft Q-learning loss, the resumable training loop, and the bank file;
- :mod:`.provenance`: what every induced bank records about how it was made;
- :mod:`.registry`: the inducers (``--method``), each with its module's ``induce_<name>(lm, job)``;
- :mod:`.settings`: their knobs (``InduceSettings``) and one task's job (``InduceJob``);
- :mod:`.run`: ``instructeval induce``, resumable, one bank file per (method, model, task).
"""
