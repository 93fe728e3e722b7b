//! Tests of [`UriTemplate::matches`]: the documented rules, round trips and hostile input.

use super::*;

fn parse(template: &str) -> UriTemplate {
    UriTemplate::parse(template).expect(template)
}

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn check(template: &str, uri: &str, expected: Option<&[(&str, &str)]>) {
    let got = parse(template).matches(uri);
    assert_eq!(got, expected.map(vars), "{template} against {uri}");
}

#[test]
fn simple_variables_take_one_segment() {
    check("/users/{id}", "/users/42", Some(&[("id", "42")]));
    check("/users/{id}", "/users/a%20b", Some(&[("id", "a b")]));
    check("/users/{id}", "/users/a/b", None);
    check("/users/{id}", "/users/", None);
    check("/users/{id}", "/users/a,b", None);
    check("/users/{id}", "/users/1?x", None);
    check("/users/{id}/", "/users/1/", Some(&[("id", "1")]));
    check("{a}-{b}", "x-y-z", Some(&[("a", "x"), ("b", "y-z")]));
    check("{x,y}", "1024,768", Some(&[("x", "1024"), ("y", "768")]));
    check("{x,y}", "1024", Some(&[("x", "1024")]));
    check("{list*}", "red,green", Some(&[("list", "red,green")]));
}

#[test]
fn literals_are_matched_exactly() {
    check("a.b/{x}", "a.b/1", Some(&[("x", "1")]));
    check("a.b/{x}", "aXb/1", None);
    check("(x)+[y]*/{v}", "(x)+[y]*/1", Some(&[("v", "1")]));
    check("a b/{v}", "a%20b/1", Some(&[("v", "1")]));
    check("file:///static", "file:///static", Some(&[]));
    check("file:///static", "file:///static2", None);
}

#[test]
fn reserved_and_fragment_span_slashes() {
    check(
        "file:///{+path}",
        "file:///a/b/c.txt",
        Some(&[("path", "a/b/c.txt")]),
    );
    check(
        "file:///{+path}",
        "file:///a%20b/c",
        Some(&[("path", "a b/c")]),
    );
    check("file:///{+path}", "file:///a?b", Some(&[("path", "a?b")]));
    check("file:///{+path}", "file:///", None);
    check(
        "{+path}/here",
        "/foo/bar/here",
        Some(&[("path", "/foo/bar")]),
    );
    check(
        "{+path,x}/here",
        "/foo/bar,1024/here",
        Some(&[("path", "/foo/bar"), ("x", "1024")]),
    );
    check(
        "/doc{#section}",
        "/doc#a/b?c",
        Some(&[("section", "a/b?c")]),
    );
    check("/doc{#section}", "/doc", Some(&[]));
    check(
        "/{+p}{#f}",
        "/a/b#frag",
        Some(&[("p", "a/b"), ("f", "frag")]),
    );
}

#[test]
fn path_and_label_expressions() {
    check(
        "/files{/path*}",
        "/files/a/b%2Fc/d",
        Some(&[("path", "a/b/c/d")]),
    );
    check("/files{/path*}", "/files", Some(&[]));
    check("/files{/path*}", "/files/", None);
    check(
        "/repos{/owner,repo}",
        "/repos/me/proj",
        Some(&[("owner", "me"), ("repo", "proj")]),
    );
    check("/repos{/owner,repo}", "/repos/me", Some(&[("owner", "me")]));
    check("{/var:1,var}", "/v/value", Some(&[("var", "value")]));
    check("{/var,var}", "/a/b", None);
    check(
        "/doc/{name}{.ext}",
        "/doc/readme.md",
        Some(&[("name", "readme"), ("ext", "md")]),
    );
    check(
        "/doc/{name}{.ext}",
        "/doc/readme",
        Some(&[("name", "readme")]),
    );
    check(
        "/doc/{name}{.ext}",
        "/doc/a.b.md",
        Some(&[("name", "a.b"), ("ext", "md")]),
    );
    check(
        "www{.dom*}",
        "www.example.com",
        Some(&[("dom", "example.com")]),
    );
    check("/m{;x,y}", "/m;x=1;y=2", Some(&[("x", "1"), ("y", "2")]));
    check("/m{;x,y}", "/m;x;y=2", Some(&[("x", ""), ("y", "2")]));
    check("/m{;list*}", "/m;list=a;list=b", Some(&[("list", "a,b")]));
}

#[test]
fn query_parameters_in_any_order() {
    let t = "/search{?q,lang}{&page}";
    check(t, "/search", Some(&[]));
    check(t, "/search?q=rust", Some(&[("q", "rust")]));
    check(
        t,
        "/search?page=2&lang=en&q=a%26b",
        Some(&[("q", "a&b"), ("lang", "en"), ("page", "2")]),
    );
    check(t, "/search?other=1&q=x&q=y", Some(&[("q", "x")]));
    check(t, "/search?q=&lang", Some(&[("q", ""), ("lang", "")]));
    check(t, "/search?q=1#frag", Some(&[("q", "1")]));
    check(t, "/searchx?q=1", None);
    check(
        "/s{?tags*}",
        "/s?tags=a&x=1&tags=b",
        Some(&[("tags", "a,b")]),
    );
    check("/s{?q}", "/s?q=%FF", None);
    check("/api?v=1{&x}", "/api?x=2&v=1", Some(&[("x", "2")]));
    check("/api?v=1{&x}", "/api?x=2&v=2", None);
    check("/api?v=1{&x}", "/api?x=2", None);
    // A literal query with simple expressions is matched by the regex, in order.
    check("/search?q={q}", "/search?q=abc", Some(&[("q", "abc")]));
    // A query part mixing `?` expressions with others never matches.
    assert_eq!(parse("/a{?q}{/x}").matches("/a?q=1"), None);
}

#[test]
fn refuses_huge_uris() {
    let t = parse("{+all}");
    let ok = "a".repeat(MAX_URI_LEN);
    assert_eq!(t.matches(&ok).map(|m| m["all"].len()), Some(MAX_URI_LEN));
    assert_eq!(t.matches(&"a".repeat(MAX_URI_LEN + 1)), None);
}

#[test]
fn pathological_input_is_linear() {
    let started = Instant::now();
    let uri = "a".repeat(50_000);
    let got = parse("{a}{b}{c}").matches(&uri).expect("matches");
    assert_eq!(got["a"].len() + got["b"].len() + got["c"].len(), 50_000);
    assert!(got.values().all(|v| !v.is_empty()));
    assert_eq!(parse("{a}{b}{c}x").matches(&uri), None);
    assert_eq!(parse("{+a}{+b}{+c}/").matches(&uri), None);
    let segments = "/a".repeat(25_000);
    assert!(parse("{/a*}{/b*}{/c*}").matches(&segments).is_some());
    assert_eq!(parse("{/a*}{/b*}{/c*}x").matches(&segments), None);
    let commas = format!("{}!", "a,".repeat(25_000));
    assert_eq!(parse("{a*}{b*}{c*}").matches(&commas), None);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

/// A small deterministic generator (64-bit LCG).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next()).unwrap_or_default() % n
    }

    /// A string of `min..=8` characters drawn from `alphabet`.
    fn string(&mut self, alphabet: &[char], min: usize) -> String {
        let len = min + self.below(9 - min);
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len())])
            .collect()
    }
}

const ANY: &[char] = &[
    'a', 'Z', '0', '-', '.', '_', '~', ' ', '/', '?', '#', '[', ']', '@', '!', '$', '&', '\'', '(',
    ')', '*', '+', ',', ';', '=', '%', 'é', '€', '😀',
];
/// For `{+…}`: no `#` (it starts the fragment) and no `%` (triplets pass through unencoded).
const RESERVED: &[char] = &[
    'a', 'Z', '0', '-', '.', '/', ':', '@', '!', '$', '&', '(', '*', ';', '=', 'é',
];
/// For `{.…}`: no `.`, which separates labels.
const LABEL: &[char] = &['a', 'Z', '0', '-', '_', '~', ' ', '/', '%', ',', 'é'];

/// How to generate each variable of a round-trip template.
enum Gen {
    /// A string of at least `min` characters from an alphabet.
    Str(&'static [char], usize),
    /// A non-empty list of non-empty strings; matched back as the items joined with `join`.
    List(&'static [char], &'static str),
}

#[test]
fn matching_inverts_expansion() {
    use Gen::{List, Str};
    // (template, [(variable, generator, may be left out)])
    type Case = (&'static str, &'static [(&'static str, Gen, bool)]);
    let cases: &[Case] = &[
        (
            "/users/{id}/posts/{post}",
            &[("id", Str(ANY, 1), false), ("post", Str(ANY, 1), false)],
        ),
        ("file:///{+path}", &[("path", Str(RESERVED, 1), false)]),
        ("/files{/segs*}", &[("segs", List(ANY, "/"), true)]),
        (
            "/search{?q,lang}{&page}",
            &[
                // With `q` and `lang` both undefined the expansion would start its query with `&`.
                ("q", Str(ANY, 0), false),
                ("lang", Str(ANY, 0), true),
                ("page", Str(ANY, 0), true),
            ],
        ),
        (
            "/doc/{name}{.ext}",
            &[("name", Str(ANY, 1), false), ("ext", Str(LABEL, 1), false)],
        ),
        ("/page{#frag}", &[("frag", Str(RESERVED, 1), true)]),
        (
            "{scheme}://{host}/items{/id}{?sort,tags*}",
            &[
                ("scheme", Str(ANY, 1), false),
                ("host", Str(ANY, 1), false),
                ("id", Str(ANY, 1), true),
                ("sort", Str(ANY, 0), true),
                ("tags", List(ANY, ","), true),
            ],
        ),
        (
            "/m{;a,b}",
            &[("a", Str(ANY, 0), false), ("b", Str(ANY, 0), true)],
        ),
    ];
    let mut rng = Rng(0x5eed);
    for (template, gens) in cases {
        let parsed = parse(template);
        for _ in 0..300 {
            let mut input = Variables::new();
            let mut expected = BTreeMap::new();
            for (name, generator, optional) in *gens {
                if *optional && rng.below(4) == 0 {
                    continue;
                }
                let (value, flat) = match generator {
                    Str(alphabet, min) => {
                        let v = rng.string(alphabet, *min);
                        (TemplateValue::String(v.clone()), v)
                    }
                    List(alphabet, join) => {
                        let items: Vec<String> = (0..1 + rng.below(4))
                            .map(|_| rng.string(alphabet, 1))
                            .collect();
                        let flat = items.join(join);
                        (TemplateValue::List(items), flat)
                    }
                };
                input.insert((*name).to_owned(), value);
                expected.insert((*name).to_owned(), flat);
            }
            let uri = parsed.expand(&input);
            assert_eq!(
                parsed.matches(&uri),
                Some(expected),
                "{template} expanded to {uri}"
            );
        }
    }
}

#[test]
fn values_are_decoded_so_handlers_see_what_was_meant() {
    // The module docs warn about this: a decoded value may hold `/` and `..`.
    check(
        "file:///files/{name}",
        "file:///files/..%2F..%2Fetc%2Fpasswd",
        Some(&[("name", "../../etc/passwd")]),
    );
    // A literal `/` is never part of a simple value.
    check(
        "file:///files/{name}",
        "file:///files/../../etc/passwd",
        None,
    );
}
