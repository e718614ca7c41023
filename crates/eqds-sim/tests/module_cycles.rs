//! The simulator's modules import each other without cycles.
//!
//! Two sibling modules `A` and `B` (children of the same parent, such as top-level
//! `crate::flow` and `crate::scenario`, or `transport::cc` and `transport::tcp`) form
//! a cycle when something in `A`'s subtree uses something in `B`'s and, through the
//! other siblings, the way leads back. Such a knot means neither can be read, tested
//! or replaced without the other; issue 25 broke the three the crate had, and this
//! test keeps them from coming back.
//!
//! It reads `src/**/*.rs` (the library; `main.rs` is the binary's own crate), strips
//! comments, strings and character literals, and collects every path into the crate:
//! `crate::a::b`, `super::x` (relative to the module, inline `mod tests` included),
//! `self::x`, with `use` groups expanded. A reference from module `X` to module `Y`
//! becomes an edge between the two children of their longest common ancestor that
//! contain `X` and `Y` (none if one contains the other). Test code counts: a unit test
//! that needs a module pulls it in as much as the code does.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Cycles still tolerated, each a set of sibling module paths that may form exactly
/// one strongly connected component. Keep it empty: an entry is work left over, not
/// a design.
const ALLOWED_CYCLES: &[&[&str]] = &[];

/// A module's path below the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// Where an edge was seen: file, line and the path as written.
#[derive(Clone, Debug)]
struct Witness {
    file: String,
    line: usize,
    path: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// Splits Rust source into identifiers, `::` and punctuation with their line numbers,
/// dropping comments, string, byte-string and character literals, and numbers.
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                i += 1;
            }
            i += 1;
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 3; // past the escaped character, which may be a quote
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br");
            if raw && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '#' | '"'))) {
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1; // the opening quote
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                        i += 1 + hashes;
                        break;
                    }
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            } else if word == "b" && matches!(at(i), '"' | '\'') {
                // A byte string or byte: lexed as the literal that follows.
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// Reads a `use` tree or a plain path after `prefix`, starting at `toks[i]` (just
/// past a `::`), and returns every full path it names and the index after it.
fn use_tree(toks: &[(Tok, usize)], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    match toks.get(i).map(|t| &t.0) {
        Some(Tok::Punct('{')) => {
            let mut paths = Vec::new();
            i += 1;
            loop {
                match toks.get(i).map(|t| &t.0) {
                    None => return (paths, i),
                    Some(Tok::Punct('}')) => return (paths, i + 1),
                    Some(Tok::Punct(',')) => i += 1,
                    Some(Tok::Ident(s)) if s == "self" => {
                        paths.push(prefix.to_vec());
                        i += 1;
                    }
                    _ => {
                        let (more, next) = use_tree(toks, i, prefix);
                        paths.extend(more);
                        // Skip an `as alias` or anything unexpected up to the next item.
                        i = next.max(i + 1);
                        while let Some(t) = toks.get(i) {
                            if matches!(t.0, Tok::Punct(',') | Tok::Punct('}')) {
                                break;
                            }
                            i += 1;
                        }
                    }
                }
            }
        }
        Some(Tok::Ident(s)) => {
            let mut path = prefix.to_vec();
            path.push(s.clone());
            i += 1;
            if toks.get(i).map(|t| &t.0) == Some(&Tok::PathSep) {
                match toks.get(i + 1).map(|t| &t.0) {
                    Some(Tok::Ident(_)) | Some(Tok::Punct('{')) => {
                        return use_tree(toks, i + 1, &path);
                    }
                    _ => {} // `::*`, `::<T>`
                }
            }
            (vec![path], i)
        }
        _ => (vec![prefix.to_vec()], i),
    }
}

/// One path into the crate as written in a module's source.
#[derive(Debug, PartialEq, Eq)]
struct Reference {
    line: usize,
    /// The path as resolved from the crate root (`crate::`, `super::` and `self::`
    /// replaced), not yet cut down to a module.
    target: Vec<String>,
}

/// Every path into the crate that the source of module `module` names.
fn references(src: &str, module: &[String]) -> Vec<Reference> {
    let toks = tokenize(src);
    let mut refs = Vec::new();
    // Inline modules (`mod tests { .. }`) the scan is inside, with the brace depth
    // their body opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = (&toks[i].0, toks[i].1);
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|&(_, d)| d > depth) {
                    inline.pop();
                }
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(kw) if matches!(kw.as_str(), "crate" | "super" | "self") => {
                let prev = i.checked_sub(1).map(|p| &toks[p].0);
                let continues = matches!(prev, Some(Tok::PathSep) | Some(Tok::Punct('$')));
                let is_path = toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep);
                if !continues && is_path {
                    // The module the path is relative to, inline modules included.
                    let mut here: Vec<String> = module.to_vec();
                    here.extend(inline.iter().map(|(n, _)| n.clone()));
                    let mut base: Vec<String> = match kw.as_str() {
                        "crate" => Vec::new(),
                        "super" => {
                            here.pop();
                            here
                        }
                        _ => here,
                    };
                    let mut j = i + 2;
                    // `super::super::..`
                    while let (Some((Tok::Ident(s), _)), Some((Tok::PathSep, _))) =
                        (toks.get(j), toks.get(j + 1))
                    {
                        if s != "super" {
                            break;
                        }
                        base.pop();
                        j += 2;
                    }
                    let (paths, next) = use_tree(&toks, j, &base);
                    refs.extend(paths.into_iter().map(|target| Reference { line, target }));
                    i = next.max(i + 1);
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    refs
}

/// The module a file is: `transport/cc/bbr.rs` is `transport::cc::bbr`, and `mod.rs`
/// and `lib.rs` are their directory's.
fn module_of(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().expect("a file name");
    let stem = file.strip_suffix(".rs").expect("a .rs file");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// Sibling edges, by parent: `parent -> (from child, to child) -> witnesses`.
type Edges = BTreeMap<ModPath, BTreeMap<(ModPath, ModPath), Vec<Witness>>>;

/// Turns references between modules into edges between siblings.
fn sibling_edges(sources: &[(String, ModPath, String)]) -> Edges {
    let modules: BTreeSet<ModPath> = sources.iter().map(|(_, m, _)| m.clone()).collect();
    let mut edges = Edges::new();
    for (file, from, src) in sources {
        for r in references(src, from) {
            // The longest prefix of the target that is a module of its own file.
            let to = (0..=r.target.len())
                .rev()
                .map(|n| r.target[..n].to_vec())
                .find(|p| modules.contains(p))
                .unwrap_or_default();
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // the same module, or one contains the other
            }
            let parent = from[..common].to_vec();
            let key = (from[..=common].to_vec(), to[..=common].to_vec());
            edges
                .entry(parent)
                .or_default()
                .entry(key)
                .or_default()
                .push(Witness {
                    file: file.clone(),
                    line: r.line,
                    path: r.target.join("::"),
                });
        }
    }
    edges
}

/// Strongly connected components with more than one member (Tarjan).
fn knots(
    nodes: &BTreeSet<ModPath>,
    succ: &BTreeMap<ModPath, BTreeSet<ModPath>>,
) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        succ: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut State, v: &ModPath) {
        let n = s.index.len();
        s.index.insert(v.clone(), n);
        s.low.insert(v.clone(), n);
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        for w in s.succ.get(v).cloned().unwrap_or_default() {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            loop {
                let w = s.stack.pop().expect("v is on the stack");
                s.on_stack.remove(&w);
                let done = &w == v;
                scc.push(w);
                if done {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.found.push(scc);
            }
        }
    }
    let mut s = State {
        succ,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// A report of every knot among siblings, leaving out the allowed ones; and the
/// allowed ones found.
fn cycle_report(edges: &Edges, allowed: &[&[&str]]) -> (String, BTreeSet<BTreeSet<String>>) {
    let allowed: BTreeSet<BTreeSet<String>> = allowed
        .iter()
        .map(|set| set.iter().map(|s| s.to_string()).collect())
        .collect();
    let mut report = String::new();
    let mut allowed_seen = BTreeSet::new();
    for (parent, group) in edges {
        let mut succ: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        let mut nodes = BTreeSet::new();
        for (a, b) in group.keys() {
            succ.entry(a.clone()).or_default().insert(b.clone());
            nodes.insert(a.clone());
            nodes.insert(b.clone());
        }
        for scc in knots(&nodes, &succ) {
            let names: BTreeSet<String> = scc.iter().map(|m| show(m)).collect();
            if allowed.contains(&names) {
                allowed_seen.insert(names);
                continue;
            }
            let members: Vec<String> = names.iter().cloned().collect();
            report += &format!(
                "\nmodules under `{}` that import each other: {}\n",
                show(parent),
                members.join(", ")
            );
            // Through every edge inside the knot, the shortest way back: each cycle
            // once, each hop with where it is written.
            let inside: BTreeSet<&ModPath> = scc.iter().collect();
            let mut cycles = BTreeSet::new();
            for (a, b) in group.keys() {
                if !(inside.contains(a) && inside.contains(b)) {
                    continue;
                }
                let mut back: BTreeMap<&ModPath, &ModPath> = BTreeMap::new();
                let mut queue = VecDeque::from([b]);
                while let Some(v) = queue.pop_front() {
                    if v == a {
                        break;
                    }
                    for w in succ.get(v).into_iter().flatten() {
                        if inside.contains(w) && w != b && !back.contains_key(w) {
                            back.insert(w, v);
                            queue.push_back(w);
                        }
                    }
                }
                let mut cycle = vec![a.clone()];
                let mut v = a;
                while v != b {
                    v = back[v];
                    cycle.push(v.clone());
                }
                cycle.reverse(); // b .. a
                cycle.rotate_right(1); // a, b, .., back to a
                let start = (0..cycle.len())
                    .min_by_key(|&k| &cycle[k])
                    .expect("not empty");
                cycle.rotate_left(start);
                cycles.insert(cycle);
            }
            for cycle in cycles {
                let mut names: Vec<String> = cycle.iter().map(|m| show(m)).collect();
                names.push(names[0].clone());
                report += &format!("  cycle {}\n", names.join(" -> "));
                for k in 0..cycle.len() {
                    let (a, b) = (&cycle[k], &cycle[(k + 1) % cycle.len()]);
                    let w = &group[&(a.clone(), b.clone())];
                    report += &format!(
                        "    {} -> {}: {}:{} ({}){}\n",
                        show(a),
                        show(b),
                        w[0].file,
                        w[0].line,
                        w[0].path,
                        match w.len() {
                            1 => String::new(),
                            n => format!(", and {} more", n - 1),
                        }
                    );
                }
            }
        }
    }
    (report, allowed_seen)
}

/// The crate's files: name, module and text.
fn crate_sources() -> Vec<(String, ModPath, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "main.rs"))
        .map(|f| {
            let rel = f.strip_prefix(&root).expect("under src");
            let src = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (format!("src/{}", rel.display()), module_of(rel), src)
        })
        .collect()
}

#[test]
fn sibling_modules_import_without_cycles() {
    let sources = crate_sources();
    let edges = sibling_edges(&sources);
    // A guard against a scan that silently finds nothing.
    let top = edges.get(&Vec::new()).map_or(0, |g| g.len());
    assert!(
        sources.len() > 50 && top > 20,
        "only {} files and {top} edges between top-level modules",
        sources.len()
    );
    let (report, allowed_seen) = cycle_report(&edges, ALLOWED_CYCLES);
    assert!(
        report.is_empty(),
        "import cycles between sibling modules:\n{report}"
    );
    for set in ALLOWED_CYCLES {
        let names: BTreeSet<String> = set.iter().map(|s| s.to_string()).collect();
        assert!(
            allowed_seen.contains(&names),
            "the allowed cycle {set:?} is gone: remove it from ALLOWED_CYCLES"
        );
    }
}

/// Prints which top-level module uses which (for `docs/architecture.md`):
/// `cargo test -p eqds-sim --test module_cycles -- --ignored --nocapture`.
#[test]
#[ignore = "prints the module graph; asserts nothing"]
fn print_top_level_graph() {
    let edges = sibling_edges(&crate_sources());
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in edges.get(&Vec::new()).into_iter().flat_map(|g| g.keys()) {
        uses.entry(show(a)).or_default().insert(show(b));
    }
    for (a, bs) in uses {
        let bs: Vec<String> = bs.into_iter().collect();
        println!("{a} -> {}", bs.join(", "));
    }
}

// The scanner itself, on small inputs: these show the test above can fail.

fn m(s: &str) -> ModPath {
    s.split("::")
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn references_expand_use_groups_and_relative_paths() {
    let src = r#"
        //! Docs naming crate::doc::Thing are not code.
        use crate::a::{b::{C, D as E}, self, f::*};
        use super::{g, h::I};
        use self::k::L;
        /* crate::block::Comment */
        fn x() -> crate::m::N { let s = "crate::string::Lit"; let c = '"'; crate::p::q(); }
        mod tests {
            use super::*;
            use super::super::r::S;
        }
    "#;
    let got: Vec<(usize, String)> = references(src, &m("top::mid"))
        .into_iter()
        .map(|r| (r.line, r.target.join("::")))
        .collect();
    let want = [
        (3, "a::b::C"),
        (3, "a::b::D"),
        (3, "a"),
        (3, "a::f"),
        (4, "top::g"),
        (4, "top::h::I"),
        (5, "top::mid::k::L"),
        (7, "m::N"),
        (7, "p::q"),
        (9, "top::mid"),
        (10, "top::r::S"),
    ];
    let want: Vec<(usize, String)> = want.iter().map(|&(l, p)| (l, p.to_string())).collect();
    assert_eq!(got, want);
}

#[test]
fn a_cycle_through_three_siblings_is_reported_with_each_hop() {
    let sources = vec![
        (
            "src/a.rs".to_string(),
            m("a"),
            "use crate::b::X;".to_string(),
        ),
        ("src/b/mod.rs".to_string(), m("b"), "mod inner;".to_string()),
        (
            "src/b/inner.rs".to_string(),
            m("b::inner"),
            "\n\nfn f() { crate::c::g() }".to_string(),
        ),
        (
            "src/c.rs".to_string(),
            m("c"),
            "use crate::a;\nuse crate::b::inner;".to_string(),
        ),
        // Parent and child, and a child's children, never form a knot of their own.
        (
            "src/d/mod.rs".to_string(),
            m("d"),
            "use self::e::Y;".to_string(),
        ),
        (
            "src/d/e.rs".to_string(),
            m("d::e"),
            "use super::Z;".to_string(),
        ),
    ];
    let edges = sibling_edges(&sources);
    let (report, _) = cycle_report(&edges, &[]);
    assert!(
        report.contains("modules under `crate` that import each other: a, b, c"),
        "{report}"
    );
    assert!(report.contains("cycle a -> b -> c -> a"), "{report}");
    assert!(
        report.contains("b -> c: src/b/inner.rs:3 (c::g)"),
        "{report}"
    );
    assert!(report.contains("cycle b -> c -> b"), "{report}");
    assert!(report.contains("c -> b: src/c.rs:2 (b::inner)"), "{report}");
    assert!(
        !report.contains("d ->") && !report.contains("-> d"),
        "{report}"
    );
    // The same knot, allowed, is not reported.
    let (report, seen) = cycle_report(&edges, &[&["a", "b", "c"]]);
    assert!(report.is_empty() && seen.len() == 1, "{report}");
}
