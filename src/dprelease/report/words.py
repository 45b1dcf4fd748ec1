"""The manifest of a release in words: what was released, epsilon and its split, the public domain and where
it came from, the randomness (with the seeded-mode warning), the parameters, when and by which version."""

from __future__ import annotations

import json

from .page import Page

__all__ = ["describe_manifest", "describe_details", "ALGORITHMS"]

# algorithm (as the manifest names it, lower case) -> (what it releases, the paper)
ALGORITHMS: dict[str, tuple[str, str]] = {
    "diffpart": ("a sanitized set-valued dataset: a context-free taxonomy of the items is partitioned top-down "
                 "with noisy counts and every leaf partition is released with a noisy count",
                 "Chen, Mohammed, Fung, Desai and Xiong, Publishing set-valued data via differential privacy, "
                 "PVLDB 2011 (DiffPart)"),
    "diffpart-prefix": ("a sanitized set-valued dataset: records are partitioned by their most frequent items "
                        "(selected under DP) into a prefix tree grown with PrivTree's noisy split decisions, and every "
                        "leaf is released with a noisy count (our improvement over DiffPart, docs/diffpart.md)",
                        "Chen et al., PVLDB 2011 (DiffPart) and Zhang, Xiao and Xie, SIGMOD 2016 (PrivTree)"),
    "inctdpart-prefix": ("the latest release of a growing set-valued dataset (an IncTDPart stream over "
                         "DiffPart-Prefix's tree)", "Zhang et al., 2013 (IncTDPart), with DiffPart-Prefix"),
    "basic": ("a sanitized set-valued dataset: a noisy count for every possible non-empty record (the Basic "
              "baseline)", "Chen et al., PVLDB 2011, section 5"),
    "inctdpart": ("the latest release of a growing set-valued dataset (an IncTDPart stream)",
                  "Zhang et al., 2013 (IncTDPart)"),
    "privbasis": ("the top-k frequent itemsets with noisy counts",
                  "Li, Qardaji, Su and Cao, PrivBasis: frequent itemset mining with differential privacy, PVLDB 2012"),
    "tf": ("the top-k itemsets of length at most m, selected on truncated frequencies, with noisy counts",
           "Bhaskar, Laxman, Smith and Thakurta, KDD 2010 (as described in PrivBasis section 3)"),
    "diffgen": ("a generalized contingency table for classification: the attributes are generalized along their "
                "taxonomies by specializations chosen under DP, and every leaf partition x class gets a noisy count",
                "Mohammed, Chen, Fung and Yu, Differentially private data release for data mining, KDD 2011 "
                "(DiffGen)"),
    "tds": ("a k-anonymous generalized table with EXACT counts (top-down specialization): NOT differentially "
            "private", "Fung, Wang and Yu, TKDE 2007"),
    "rps": ("a synthetic table: the domain is split recursively at private medians, every final region gets a "
            "noisy count, and that many records are drawn uniformly inside it",
            "Qardaji and Li, Recursive partitioning and summarization, ASIACCS 2012 (RPS)"),
    "mondrian": ("a k-anonymous synthetic table built from EXACT data (Mondrian groups, values drawn in each "
                 "group's box): NOT differentially private", "LeFevre, DeWitt and Ramakrishnan, ICDE 2006"),
    "degrees-rps": ("a graph's degree sequence under node-DP (the graph projected onto maximum degree theta; RPS "
                    "on the degree domain)", "Qardaji and Li, ASIACCS 2012; projection of Day, Li and Lyu, SIGMOD 2016"),
    "degrees-hay": ("a graph's degree sequence under node-DP (sorted sequence with noise and isotonic regression, "
                    "on the graph projected onto maximum degree theta)",
                    "Hay, Li, Miklau and Jensen, ICDM 2009, at node-DP sensitivity"),
    "degrees-cumulative": ("a graph's degree sequence under node-DP (theta-cumulative histogram of the graph "
                           "projected onto maximum degree theta)", "Day, Li and Lyu, SIGMOD 2016"),
}
for _method in ("rps", "hay", "cumulative"):  # a graph regenerated from the released sequence (post-processing)
    _what, _paper = ALGORITHMS[f"degrees-{_method}"]
    ALGORITHMS[f"degrees-{_method}-graph"] = (f"a graph regenerated from {_what}", _paper)

_DOMAIN_SOURCES = {
    "declared-range": "declared by the custodian as an integer range",
    "declared-file": "declared by the custodian in a file, one item per line",
    "derived-from-data": "DERIVED FROM THE DATA: it reveals which items occur",
}


def _value(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return json.dumps(v, allow_nan=False)
    return "none" if v is None else str(v)


def describe_manifest(page: Page, manifest: dict[str, object], release_path: str) -> None:
    """Append the manifest in words to ``page``: what was released, epsilon and its split, the public domain,
    the randomness (:func:`describe_details` adds the parameters and provenance)."""
    algorithm = str(manifest.get("algorithm", "?"))
    what, paper = ALGORITHMS.get(algorithm.lower(), ("a release", ""))
    page.heading("What was released")
    page.paragraph(f"{release_path}: {what}.")
    if paper:
        page.paragraph(f"Algorithm: {algorithm} — {paper}.", "note")
    release = manifest.get("release")
    if isinstance(release, dict) and release:
        page.facts([(k.replace("_", " "), _value(v)) for k, v in release.items()])

    page.heading("Privacy budget")
    privacy = manifest.get("privacy") if isinstance(manifest.get("privacy"), dict) else {}
    eps = manifest.get("epsilon")
    if eps is None:
        page.warning(f"No epsilon: this release is not differentially private "
                     f"({_value(privacy.get('model', 'no privacy model recorded'))}).")
    else:
        spent = privacy.get("epsilon_spent")
        page.paragraph(f"ε = {_value(eps)} in total" + (f", of which {_value(spent)} was spent" if spent is not None
                                                        else "") + ". Neighbouring datasets differ in one record "
                       "(adding or removing one person's record changes the probability of any release by at most "
                       "a factor e^ε).")
        if privacy.get("composition"):
            page.paragraph(f"Composition: {privacy['composition']}.", "note")
    split = manifest.get("budget_split")
    if isinstance(split, dict) and split:
        page.heading("How ε is split", 3)
        page.table(("part", "share of ε and where it goes"), [(k.replace("_", " "), _value(v)) for k, v in split.items()])

    page.heading("Public domain")
    domain = manifest.get("domain")
    if isinstance(domain, dict):
        _domain(page, domain)
    else:
        page.paragraph("The manifest records no domain.")

    page.heading("Randomness")
    rng = manifest.get("rng") if isinstance(manifest.get("rng"), dict) else {}
    mode = rng.get("mode")
    if mode == "secure":
        page.paragraph("Secure: the noise comes from the operating system's cryptographic random number "
                       "generator through OpenDP's samplers. This is the mode for publication.")
    elif mode == "none":
        page.paragraph("None: the algorithm draws no randomness.")
    else:
        seed = rng.get("seed")
        page.warning(f"Seeded experiment mode (seed {seed}): "
                     + str(rng.get("warning") or "reproducible, NOT for publication").replace(
                         "seeded experiment mode: ", ""))
        if rng.get("sources"):
            page.paragraph(f"{len(rng['sources'])} random sources are listed in the manifest.", "note")



def describe_details(page: Page, manifest: dict[str, object]) -> None:
    """The rest of the manifest (parameters, provenance, notes), at the end of the page."""
    params = manifest.get("parameters")
    if isinstance(params, dict) and params:
        page.heading("Parameters")
        page.table(("parameter", "value"), [(k, _value(v)) for k, v in params.items()])

    page.heading("Provenance")
    facts = [("run started (UTC)", _value(manifest.get("created_utc"))),
             ("dprelease version", _value(manifest.get("version"))),
             ("release body", _value(manifest.get("body"))),
             ("body sha256", _value(manifest.get("body_sha256")))]
    if manifest.get("other_files"):
        facts.append(("other files", _value(manifest["other_files"])))
    if isinstance(manifest.get("stream"), dict):
        facts.append(("stream", _value(manifest["stream"])))
    page.facts(facts)
    notes = manifest.get("notes")
    if notes:
        page.heading("Notes in the manifest", 3)
        page.bullets([str(n) for n in notes])  # type: ignore[union-attr]


def _domain(page: Page, domain: dict[str, object]) -> None:
    if "attributes" in domain:  # a table schema
        cls = domain.get("class") if isinstance(domain.get("class"), dict) else {}
        page.paragraph(f"Declared in the schema {domain.get('source', '?')}: the attributes, their taxonomy trees "
                       f"and bounds, and the class {cls.get('name', '?')} with values "
                       f"{', '.join(map(str, cls.get('values', [])))}.")
        rows = []
        for a in domain.get("attributes", []):  # type: ignore[union-attr]
            if a.get("type") == "numeric":
                lo, hi = a.get("bounds", [None, None])
                rows.append((a.get("name"), "numeric" + (" (integer)" if a.get("integer") else ""),
                             f"public bounds [{_value(lo)}, {_value(hi)})"))
            else:
                rows.append((a.get("name"), "categorical", f"taxonomy of {a.get('taxonomy_nodes')} nodes, "
                                                           f"{a.get('taxonomy_leaves')} leaves"))
        page.table(("attribute", "type", "public domain"), rows)
        if domain.get("drop"):
            page.paragraph(f"Dropped columns: {', '.join(map(str, domain['drop']))}.", "note")  # type: ignore[arg-type]
        return
    if "theta" in domain:  # a degree sequence (node-DP)
        page.paragraph(f"Degrees 0 .. θ = {domain['theta']}: the public degree bound, {domain.get('source', '?')} by "
                       f"the custodian; the graph is projected onto it before anything is released. Neighbouring "
                       f"graphs: {domain.get('neighbours', '?')}.")
        return
    if "size" not in domain:  # a domain this version does not know: its facts as recorded
        page.facts([(str(k), _value(v)) for k, v in domain.items()])
        return
    source = str(domain.get("source", "?"))
    words = _DOMAIN_SOURCES.get(source, source)
    page.paragraph(f"The item universe: {domain.get('size', '?')} items ({domain.get('spec')}), {words}.")
    if source == "derived-from-data" or domain.get("warning"):
        page.warning(str(domain.get("warning") or "The universe was derived from the data: it reveals which items "
                                                  "occur; declare it with --universe."))
