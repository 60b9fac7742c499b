"""A small deterministic BPE trainer.

`tokenizers`' own BpeTrainer breaks ties between equally frequent pairs (and between equally
frequent alphabet characters) in hash-map order, so two runs on the same corpus give different
merges. Fixtures must regenerate byte for byte, so merges are learned here instead: the
standard algorithm (repeatedly merge the most frequent adjacent pair inside pre-tokenized words),
with ties broken by the pair's text. The word splitting is done by the real `tokenizers`
normalizer and pre-tokenizer of the tokenizer being built, so the pieces are exactly the ones
the finished tokenizer will run BPE on.
"""
import heapq
from collections import Counter, defaultdict


def word_counts(tokenizer, lines):
    """Count the pre-tokenized pieces of `lines` using `tokenizer`'s normalizer and pre-tokenizer."""
    counts = Counter()
    norm, pre = tokenizer.normalizer, tokenizer.pre_tokenizer
    for line in lines:
        text = norm.normalize_str(line) if norm is not None else line
        for piece, _ in pre.pre_tokenize_str(text):
            counts[piece] += 1
    return counts


def train(counts, alphabet, n_merges, min_frequency=2):
    """Learn up to `n_merges` merges over `counts` ({piece: count}).

    Characters outside `alphabet` stay single symbols that never merge (the finished tokenizer
    sends them to byte fallback or drops them, like the real ones do for rare characters).
    Returns the list of merges as (left, right) pairs, most important first.
    """
    alphabet = set(alphabet)
    words, freqs = [], []
    for piece in sorted(counts):
        words.append(list(piece))
        freqs.append(counts[piece])

    pair_count = defaultdict(int)
    where = defaultdict(set)

    def pairs_of(i):
        w = words[i]
        for a, b in zip(w, w[1:]):
            if (a in alphabet or len(a) > 1) and (b in alphabet or len(b) > 1):
                yield a, b

    for i in range(len(words)):
        for p in pairs_of(i):
            pair_count[p] += freqs[i]
            where[p].add(i)

    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < n_merges:
        negc, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -negc:
            continue                      # stale entry
        if -negc < min_frequency:
            break
        merges.append(pair)
        a, b = pair
        new = a + b
        touched = set()
        for i in sorted(where.pop(pair, ())):
            w = words[i]
            if len(w) < 2:
                continue
            for p in pairs_of(i):
                pair_count[p] -= freqs[i]
                touched.add(p)
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in pairs_of(i):
                pair_count[p] += freqs[i]
                where[p].add(i)
                touched.add(p)
        pair_count.pop(pair, None)
        for p in touched:
            c = pair_count.get(p, 0)
            if c <= 0:
                pair_count.pop(p, None)
            else:
                heapq.heappush(heap, (-c, p))
    return merges


def merged_tokens(merges):
    """The new vocabulary entries the merges create, in merge order, without repeats."""
    seen, out = set(), []
    for a, b in merges:
        t = a + b
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out
