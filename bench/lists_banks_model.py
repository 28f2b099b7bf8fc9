# A Monte-Carlo of the spmm lists' shared-memory sums (kernels/sparse.cu, listed_batch and
# add_listed; bench/NOTES.md "spmm lists: what binds them"): per list added, the wavefronts of the
# sums' loads and stores (a load and a store per pair, each instruction as many wavefronts as its
# most loaded bank, banks = 4-byte words % 32) and the lists' global loads (one a head, one a later
# chunk). A round: PARTS = 32 / LANES parts of LANES lanes, each adding LISTS_AT_ONCE lists; a head
# of 2 pairs a lane (f32), then chunks of LANES pairs while any list of the round goes on; each
# k-group adds list u0 + c of every part into copy c, c < COPIES. Options: the pairs' order in a
# list (column, or bank then column) and a rotation of part q's banks by q x ROT words (the rows'
# pads). Matched ncu on 61d55f9 (10000² x 200, 128 columns, 10 %): 3.27 M sums loads (3.59 M less
# the lines' final reads) against 3.23 M modelled.
#   python3 bench/lists_banks_model.py
import random

HEAD, AT_ONCE, COLS = 2, 4, 128


def a_list(rate, bank_order):
    cols = [c for c in range(COLS) if random.random() < rate]
    return sorted(cols, key=(lambda c: (c % 32, c)) if bank_order else None)


def model(rate, lanes, bank_order=False, rot=0, rounds=3000):
    parts = 32 // lanes
    copies = 2 if 2 * parts * COLS <= 1024 else 1
    sums = loads = lists = 0
    for _ in range(rounds):
        batch = [[a_list(rate, bank_order) for _ in range(AT_ONCE)] for _ in range(parts)]
        lists += parts * AT_ONCE
        longest = max(len(lst) for part in batch for lst in part)
        groups = [[s * HEAD + k for s in range(lanes)] for k in range(HEAD)]
        j = lanes * HEAD
        while j < longest:
            groups.append([j + s for s in range(lanes)])
            j += lanes
        loads += sum(1 + max(0, -(-(len(lst) - lanes * HEAD) // lanes)) for part in batch for lst in part)
        for positions in groups:
            for u0 in range(0, AT_ONCE, copies):
                for c in range(copies):
                    banks = {}
                    for q, part in enumerate(batch):
                        lst = part[u0 + c]
                        for p in positions:
                            if p < len(lst):
                                b = (lst[p] + rot * q) % 32
                                banks[b] = banks.get(b, 0) + 1
                    sums += 2 * max(banks.values(), default=0)
    return sums / lists, loads / lists


if __name__ == "__main__":
    random.seed(1)
    print("rate lanes | column order | bank order | bank order, rows padded  (sums wavefronts, global loads a list)")
    for rate, lanes in ((0.02, 4), (0.05, 4), (0.1, 8), (0.1, 4)):
        cells = [model(rate, lanes), model(rate, lanes, True), model(rate, lanes, True, lanes)]
        print(f"{rate:4} {lanes:5} | " + " | ".join(f"{s:.2f}, {g:.2f}" for s, g in cells))
