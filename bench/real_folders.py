"""Rebuild the real memory folders of bench/real/manifest.json from local git copies.

The folders are Claude Code memory directories that users committed to public
GitHub repositories. Their text is not ours to commit, so the repository holds
only where each one is (repository, commit, folder path, the folder's git tree
id) and this script copies the files out of a local copy of each repository
into the ignored bench/data/real/projects/<name>/, one folder per entry. The
queries and gold answers written for them (bench/real/queries.jsonl) are ours
and are committed.

A local copy is either a bare mirror as the `fetch` tool leaves it
(``/work/.mirror/<owner>+<name>/repo``) or an ordinary clone:

    git clone https://github.com/<owner>/<name> CLONES/<owner>+<name>

Every build checks that the folder's tree id at the commit matches the
manifest, so a force-pushed or different repository cannot slip in.

``check`` reads the built folders and the labels together: every gold or
surfaced filename must exist and parse, no gold may be surfaced, superseded or
a usage doc for a tool in ``recent_tools``; it also counts the habits of real
folders the ranker has to live with (``name`` unlike the filename, a filename
prefix that disagrees with ``type``, ``type`` nested under ``metadata:``,
MEMORY.md lines for files that do not exist, files MEMORY.md leaves out,
files whose frontmatter does not parse).

Usage: .venv/bin/python bench/real_folders.py build [--mirrors DIR] [--clones DIR] [--out DIR]
       .venv/bin/python bench/real_folders.py check [--out DIR]
       .venv/bin/python bench/real_folders.py list
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from memoryd.indexer.parse import parse_file

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "real" / "manifest.json"
DEFAULT_OUT = HERE / "data" / "real"
DEFAULT_MIRRORS = Path("/work/.mirror")


class BuildError(Exception):
    """A folder could not be rebuilt; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Folder:
    name: str
    repo: str
    commit: str
    path: str
    tree: str
    licence: str
    language: str

    @property
    def slug(self) -> str:
        return self.repo.replace("/", "+")


def load_manifest(path: Path = MANIFEST) -> list[Folder]:
    entries = json.loads(path.read_text(encoding="utf-8"))["folders"]
    return [Folder(**entry) for entry in entries]


def git(repo: Path, *args: str) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if done.returncode:
        raise BuildError(done.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return done.stdout


def find_copy(folder: Folder, mirrors: Path, clones: Path | None) -> Path:
    """The first local copy of ``folder.repo`` that holds its commit."""
    owner, name = folder.repo.split("/")
    places = [mirrors / folder.slug / "repo", mirrors / folder.slug]
    if clones is not None:
        places += [clones / folder.slug, clones / name, clones / owner / name]
    for place in places:
        if (place / "HEAD").is_file() or (place / ".git").exists():
            try:
                git(place, "cat-file", "-e", f"{folder.commit}^{{commit}}")
            except BuildError:
                continue
            return place
    raise BuildError(
        f"no local copy of {folder.repo} holding commit {folder.commit[:12]}; get one with\n"
        f"    git clone https://github.com/{folder.repo} CLONES/{folder.slug}\n"
        f"and pass --clones CLONES (looked in: {', '.join(map(str, places))})"
    )


def build_one(folder: Folder, copy: Path, out: Path) -> int:
    """Write the folder's top-level Markdown files under ``out/<name>``; returns the count."""
    tree = git(copy, "rev-parse", f"{folder.commit}:{folder.path}").decode().strip()
    if tree != folder.tree:
        raise BuildError(
            f"{folder.repo}@{folder.commit[:12]}:{folder.path} is tree {tree[:12]}, "
            f"the manifest says {folder.tree[:12]}"
        )
    target = out / folder.name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    count = 0
    for line in git(copy, "ls-tree", "-z", folder.tree).split(b"\0"):
        if not line:
            continue
        meta, name = line.split(b"\t", 1)
        _mode, kind, blob = meta.split()
        filename = name.decode()
        if kind != b"blob" or not filename.endswith(".md") or "/" in filename:
            continue
        (target / filename).write_bytes(git(copy, "cat-file", "blob", blob.decode()))
        count += 1
    return count


def build(out: Path, mirrors: Path, clones: Path | None, folders: Sequence[Folder]) -> int:
    projects = out / "projects"
    failed = 0
    for folder in folders:
        try:
            copy = find_copy(folder, mirrors, clones)
            n = build_one(folder, copy, projects)
        except BuildError as exc:
            print(f"{folder.name}: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{folder.name:<18} {n:>3} files  {folder.repo}@{folder.commit[:10]}:{folder.path}")
    return 1 if failed else 0


TYPE_PREFIXES = {
    "feedback": "feedback",
    "project": "project",
    "user": "user",
    "reference": "reference",
    "ref": "reference",
}
_LINK = re.compile(r"\]\(([^()\s]+\.md)\)")


def _slug(text: str) -> str:
    return re.sub(r"[\s_-]+", "-", text.strip().lower())


def folder_habits(folder: Path) -> dict[str, list[str]]:
    """Filenames showing each habit of real folders (see the module docstring)."""
    index = folder / "MEMORY.md"
    linked = set(_LINK.findall(index.read_text(errors="replace"))) if index.is_file() else set()
    habits: dict[str, list[str]] = {
        k: []
        for k in (
            "broken",
            "nested_metadata",
            "name_differs",
            "prefix_disagrees",
            "dangling_index_lines",
            "not_in_index",
            "strict_yaml_refuses",
        )
    }
    names = set()
    for path in sorted(folder.glob("*.md")):
        if path.name == "MEMORY.md":
            continue
        names.add(path.name)
        parsed = parse_file(str(path), path.name, path.stat().st_size)
        if parsed.error is not None:
            habits["broken"].append(path.name)
            continue
        try:
            header = yaml.safe_load(path.read_text(errors="replace").split("\n---", 1)[0][3:])
        except yaml.YAMLError:  # memoryd's parser recovered what strict YAML refuses
            habits["strict_yaml_refuses"].append(path.name)
            header = None
        nested = header.get("metadata") if isinstance(header, dict) else None
        mtype = parsed.type
        if isinstance(nested, dict) and "type" in nested:
            habits["nested_metadata"].append(path.name)
            mtype = mtype or str(nested["type"])
        if parsed.name and _slug(parsed.name) != _slug(path.stem):
            habits["name_differs"].append(path.name)
        prefix = TYPE_PREFIXES.get(re.split(r"[_-]", path.stem)[0])
        if prefix and mtype and prefix != mtype:
            habits["prefix_disagrees"].append(path.name)
    habits["dangling_index_lines"] = sorted(linked - names)
    habits["not_in_index"] = sorted(names - linked) if index.is_file() else []
    return habits


def check(out: Path, labels: Path = HERE / "real") -> int:
    """Validate the labels against the built folders; print each folder's habits."""
    annotations = json.loads((labels / "annotations.json").read_text(encoding="utf-8"))
    queries = [
        json.loads(line)
        for line in (labels / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    problems: list[str] = []
    usable: dict[str, set[str]] = {}
    for project in sorted({q["project"] for q in queries}):
        folder = out / "projects" / project
        if not folder.is_dir():
            problems.append(f"{project}: not built (run build first)")
            continue
        usable[project] = {
            p.name
            for p in folder.glob("*.md")
            if p.name != "MEMORY.md" and parse_file(str(p), p.name, p.stat().st_size).error is None
        }
        habits = folder_habits(folder)
        counts = ", ".join(f"{k} {len(v)}" for k, v in habits.items())
        print(f"{project:<18} {len(usable[project]):>3} usable memories; {counts}")
    for q in queries:
        if q["project"] not in usable:
            continue
        ann = annotations[q["project"]]
        qid = q["id"]
        gold, surfaced = set(q["gold"]), set(q["surfaced"])
        for name in sorted((gold | surfaced) - usable[q["project"]]):
            problems.append(f"{qid}: {name} is not a usable memory of {q['project']}")
        usage = {f for t in q["recent_tools"] for f in ann["tool_usage_docs"].get(t, [])}
        for rule, bad in (
            ("surfaced", gold & surfaced),
            ("superseded", gold & set(ann["superseded"])),
            ("a usage doc of a recent tool", gold & usage),
        ):
            problems.extend(f"{qid}: gold {name} is {rule}" for name in sorted(bad))
    kinds = Counter(q["kind"] for q in queries)
    print(f"{len(queries)} queries: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="copy every folder out of its local git copy")
    b.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS, help="fetch's mirror root")
    b.add_argument("--clones", type=Path, help="a directory of ordinary clones")
    b.add_argument("--out", type=Path, default=DEFAULT_OUT)
    c = sub.add_parser("check", help="validate the labels against the built folders")
    c.add_argument("--out", type=Path, default=DEFAULT_OUT)
    sub.add_parser("list", help="print the manifest")
    args = parser.parse_args(argv)
    folders = load_manifest()
    if args.command == "list":
        for f in folders:
            where = f"{f.repo}@{f.commit[:10]}:{f.path}"
            print(f"{f.name:<18} {f.language:<22} {f.licence:<12} {where}")
        return 0
    if args.command == "check":
        return check(args.out)
    return build(args.out, args.mirrors, args.clones, folders)


if __name__ == "__main__":
    sys.exit(main())
