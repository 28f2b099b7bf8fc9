"""Fails unless every public function of include/evsparse.h is fully documented for the API
reference: a @param for each parameter (and none other), @retval EVS_SUCCESS and the error
statuses it can return (or @return for the functions that return no status), and @ingroup
naming a group of docs/groups.dox, every group having a function. Needs no doxygen (`make
docs` renders the same comments and fails on its own warnings too).

    python3 docs/check_reference.py [include/evsparse.h docs/groups.dox]
"""
import re
import sys


def functions(header):
    """(name, result type, [parameter names], doc comment) for every function declaration."""
    pattern = r"/\*\*((?:(?!\*/).)*?)\*/\s*\n(\w[\w ]*?\**)\s*(evs_\w+)\(([^)]*)\);"
    for doc, result, name, params in re.findall(pattern, header, re.S):
        names = [re.findall(r"(\w+)\s*$", p)[0] for p in params.split(",") if p.strip() not in ("", "void")]
        yield name, result.strip(), names, doc


def problems(header, groups_dox):
    statuses = set(re.findall(r"#define (EVS_(?:SUCCESS|ERROR_\w+)) ", header))
    groups = set(re.findall(r"@defgroup (\w+)", groups_dox))
    used, found, documented_functions = set(), [], list(functions(header))
    declared = len(re.findall(r"^\w[\w ]*?\**\s*evs_\w+\(", header, re.M))
    if declared != len(documented_functions):
        found.append(f"{declared - len(documented_functions)} declarations have no doc comment directly above them")
    for name, result, params, doc in documented_functions:
        documented = re.findall(r"@param (\w+)", doc)
        if documented != params:
            found.append(f"{name}: @param for {documented}, parameters are {params}")
        retvals = re.findall(r"@retval (\w+)", doc)
        if result == "evs_status":
            if "EVS_SUCCESS" not in retvals or not any(r.startswith("EVS_ERROR_") for r in retvals):
                found.append(f"{name}: needs @retval EVS_SUCCESS and the error statuses it returns")
            found += [f"{name}: @retval {r} is not a status" for r in retvals if r not in statuses]
        elif "@return" not in doc:
            found.append(f"{name}: returns {result} but has no @return")
        group = re.findall(r"@ingroup (\w+)", doc)
        if len(group) != 1 or group[0] not in groups:
            found.append(f"{name}: @ingroup {group} is not one group of docs/groups.dox ({sorted(groups)})")
        used.update(group)
    found += [f"group {g} has no function" for g in sorted(groups - used)]
    return found, declared


def main():
    header_path, groups_path = sys.argv[1:3] if len(sys.argv) == 3 else ("include/evsparse.h", "docs/groups.dox")
    with open(header_path) as h, open(groups_path) as g:
        found, count = problems(h.read(), g.read())
    for p in found:
        print(p)
    print(f"API reference: {count} functions, {'all documented' if not found else f'{len(found)} problems'}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
