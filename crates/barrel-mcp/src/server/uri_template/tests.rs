//! Tests of URI template parsing, expansion (RFC 6570 §1.2 and §3.2 examples) and matching.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::*;

fn s(v: &str) -> TemplateValue {
    TemplateValue::String(v.to_owned())
}

fn list(items: &[&str]) -> TemplateValue {
    TemplateValue::List(items.iter().map(|i| (*i).to_owned()).collect())
}

fn map(pairs: &[(&str, &str)]) -> TemplateValue {
    TemplateValue::Map(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

/// The variables of RFC 6570 §3.2.
fn rfc_vars() -> Variables {
    let mut vars = Variables::new();
    vars.insert("count".into(), list(&["one", "two", "three"]));
    vars.insert("dom".into(), list(&["example", "com"]));
    vars.insert("dub".into(), s("me/too"));
    vars.insert("hello".into(), s("Hello World!"));
    vars.insert("half".into(), s("50%"));
    vars.insert("var".into(), s("value"));
    vars.insert("who".into(), s("fred"));
    vars.insert("base".into(), s("http://example.com/home/"));
    vars.insert("path".into(), s("/foo/bar"));
    vars.insert("list".into(), list(&["red", "green", "blue"]));
    vars.insert(
        "keys".into(),
        map(&[("semi", ";"), ("dot", "."), ("comma", ",")]),
    );
    vars.insert("v".into(), s("6"));
    vars.insert("x".into(), s("1024"));
    vars.insert("y".into(), s("768"));
    vars.insert("empty".into(), s(""));
    vars.insert("empty_keys".into(), TemplateValue::Map(Vec::new()));
    vars
}

fn check_expansions(cases: &[(&str, &str)]) {
    let vars = rfc_vars();
    for (template, expected) in cases {
        let parsed = UriTemplate::parse(template).expect(template);
        assert_eq!(parsed.expand(&vars), *expected, "template {template}");
    }
}

#[test]
fn expands_variable_lists_and_simple_strings() {
    check_expansions(&[
        ("{count}", "one,two,three"),
        ("{count*}", "one,two,three"),
        ("{/count}", "/one,two,three"),
        ("{/count*}", "/one/two/three"),
        ("{;count}", ";count=one,two,three"),
        ("{;count*}", ";count=one;count=two;count=three"),
        ("{?count}", "?count=one,two,three"),
        ("{?count*}", "?count=one&count=two&count=three"),
        ("{&count*}", "&count=one&count=two&count=three"),
        ("{var}", "value"),
        ("{hello}", "Hello%20World%21"),
        ("{half}", "50%25"),
        ("O{empty}X", "OX"),
        ("O{undef}X", "OX"),
        ("{x,y}", "1024,768"),
        ("{x,hello,y}", "1024,Hello%20World%21,768"),
        ("?{x,empty}", "?1024,"),
        ("?{x,undef}", "?1024"),
        ("?{undef,y}", "?768"),
        ("{var:3}", "val"),
        ("{var:30}", "value"),
        ("{list}", "red,green,blue"),
        ("{list*}", "red,green,blue"),
        ("{keys}", "semi,%3B,dot,.,comma,%2C"),
        ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    ]);
}

#[test]
fn expands_reserved_and_fragment() {
    check_expansions(&[
        ("{+var}", "value"),
        ("{+hello}", "Hello%20World!"),
        ("{+half}", "50%25"),
        ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
        ("{+base}index", "http://example.com/home/index"),
        ("O{+empty}X", "OX"),
        ("O{+undef}X", "OX"),
        ("{+path}/here", "/foo/bar/here"),
        ("here?ref={+path}", "here?ref=/foo/bar"),
        ("up{+path}{var}/here", "up/foo/barvalue/here"),
        ("{+x,hello,y}", "1024,Hello%20World!,768"),
        ("{+path,x}/here", "/foo/bar,1024/here"),
        ("{+path:6}/here", "/foo/b/here"),
        ("{+list}", "red,green,blue"),
        ("{+list*}", "red,green,blue"),
        ("{+keys}", "semi,;,dot,.,comma,,"),
        ("{+keys*}", "semi=;,dot=.,comma=,"),
        ("{#var}", "#value"),
        ("{#hello}", "#Hello%20World!"),
        ("{#half}", "#50%25"),
        ("foo{#empty}", "foo#"),
        ("foo{#undef}", "foo"),
        ("{#x,hello,y}", "#1024,Hello%20World!,768"),
        ("{#path,x}/here", "#/foo/bar,1024/here"),
        ("{#path:6}/here", "#/foo/b/here"),
        ("{#list}", "#red,green,blue"),
        ("{#list*}", "#red,green,blue"),
        ("{#keys}", "#semi,;,dot,.,comma,,"),
        ("{#keys*}", "#semi=;,dot=.,comma=,"),
    ]);
}

#[test]
fn expands_labels_and_paths() {
    check_expansions(&[
        ("{.who}", ".fred"),
        ("{.who,who}", ".fred.fred"),
        ("{.half,who}", ".50%25.fred"),
        ("www{.dom*}", "www.example.com"),
        ("X{.var}", "X.value"),
        ("X{.empty}", "X."),
        ("X{.undef}", "X"),
        ("X{.var:3}", "X.val"),
        ("X{.list}", "X.red,green,blue"),
        ("X{.list*}", "X.red.green.blue"),
        ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
        ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
        ("X{.empty_keys}", "X"),
        ("X{.empty_keys*}", "X"),
        ("{/who}", "/fred"),
        ("{/who,who}", "/fred/fred"),
        ("{/half,who}", "/50%25/fred"),
        ("{/who,dub}", "/fred/me%2Ftoo"),
        ("{/var}", "/value"),
        ("{/var,empty}", "/value/"),
        ("{/var,undef}", "/value"),
        ("{/var,x}/here", "/value/1024/here"),
        ("{/var:1,var}", "/v/value"),
        ("{/list}", "/red,green,blue"),
        ("{/list*}", "/red/green/blue"),
        ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
        ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
        ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    ]);
}

#[test]
fn expands_named_parameters() {
    check_expansions(&[
        ("{;who}", ";who=fred"),
        ("{;half}", ";half=50%25"),
        ("{;empty}", ";empty"),
        ("{;v,empty,who}", ";v=6;empty;who=fred"),
        ("{;v,bar,who}", ";v=6;who=fred"),
        ("{;x,y}", ";x=1024;y=768"),
        ("{;x,y,empty}", ";x=1024;y=768;empty"),
        ("{;x,y,undef}", ";x=1024;y=768"),
        ("{;hello:5}", ";hello=Hello"),
        ("{;list}", ";list=red,green,blue"),
        ("{;list*}", ";list=red;list=green;list=blue"),
        ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
        ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
        ("{?who}", "?who=fred"),
        ("{?half}", "?half=50%25"),
        ("{?x,y}", "?x=1024&y=768"),
        ("{?x,y,empty}", "?x=1024&y=768&empty="),
        ("{?x,y,undef}", "?x=1024&y=768"),
        ("{?var:3}", "?var=val"),
        ("{?list}", "?list=red,green,blue"),
        ("{?list*}", "?list=red&list=green&list=blue"),
        ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
        ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
        ("{&who}", "&who=fred"),
        ("{&half}", "&half=50%25"),
        ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
        ("{&x,y,empty}", "&x=1024&y=768&empty="),
        ("{&var:3}", "&var=val"),
        ("{&list}", "&list=red,green,blue"),
        ("{&list*}", "&list=red&list=green&list=blue"),
        ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
        ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
    ]);
}

#[test]
fn expands_level_examples_of_section_1_2() {
    check_expansions(&[
        ("http://example.com/~{username}/", "http://example.com/~/"),
        ("{+path}/here", "/foo/bar/here"),
        ("X{.var}", "X.value"),
        ("{/var,x}/here", "/value/1024/here"),
        ("{?x,y}", "?x=1024&y=768"),
        ("{&x,y,empty}", "&x=1024&y=768&empty="),
        ("{var:3}", "val"),
        ("{;list*}", ";list=red;list=green;list=blue"),
        ("X{.list*}", "X.red.green.blue"),
    ]);
}

#[test]
fn encodes_unicode_and_literals() {
    let mut vars = Variables::new();
    vars.insert("v".into(), s("é/€"));
    let t = UriTemplate::parse("a b/{v}/{+v}").expect("parses");
    assert_eq!(t.expand(&vars), "a%20b/%C3%A9%2F%E2%82%AC/%C3%A9/%E2%82%AC");
    let prefix = UriTemplate::parse("{v:1}").expect("parses");
    assert_eq!(prefix.expand(&vars), "%C3%A9");
    // `+` keeps pct-encoded triplets but encodes a stray `%`.
    vars.insert("p".into(), s("%41%zz"));
    let reserved = UriTemplate::parse("{+p}|{p}").expect("parses");
    assert_eq!(reserved.expand(&vars), "%41%25zz%7C%2541%25zz");
}

#[test]
fn rejects_bad_templates() {
    use UriTemplateError as E;
    let cases: &[(&str, E)] = &[
        ("{var", E::Unclosed { at: 0 }),
        ("a}b", E::Unmatched { at: 1 }),
        ("{a}}", E::Unmatched { at: 3 }),
        ("{}", E::InvalidVarName { at: 0 }),
        ("{+}", E::InvalidVarName { at: 0 }),
        ("{a,}", E::InvalidVarName { at: 0 }),
        ("{=a}", E::ReservedOperator { op: '=', at: 1 }),
        ("{!a}", E::ReservedOperator { op: '!', at: 1 }),
        ("x{|a}", E::ReservedOperator { op: '|', at: 2 }),
        ("{a b}", E::InvalidVarName { at: 0 }),
        ("{a{b}", E::InvalidVarName { at: 0 }),
        ("{.a.}", E::InvalidVarName { at: 0 }),
        ("{a..b}", E::InvalidVarName { at: 0 }),
        ("{a%2}", E::InvalidVarName { at: 0 }),
        ("{a-b}", E::InvalidVarName { at: 0 }),
        ("{a:0}", E::InvalidPrefix { at: 0 }),
        ("{a:10000}", E::InvalidPrefix { at: 0 }),
        ("{a:x}", E::InvalidPrefix { at: 0 }),
        ("{a:}", E::InvalidPrefix { at: 0 }),
        ("{a:3*}", E::InvalidVarName { at: 0 }),
    ];
    for (template, expected) in cases {
        assert_eq!(
            UriTemplate::parse(template).as_ref(),
            Err(expected),
            "{template}"
        );
    }
    assert!(UriTemplate::parse("{a.b,c%20d,_x:9999}").is_ok());
}

#[test]
fn enforces_limits() {
    let long = "a".repeat(MAX_TEMPLATE_LEN + 1);
    assert_eq!(
        UriTemplate::parse(&long),
        Err(UriTemplateError::TooLong { len: long.len() })
    );
    let many = "{a}".repeat(MAX_EXPRESSIONS + 1);
    assert_eq!(
        UriTemplate::parse(&many),
        Err(UriTemplateError::TooManyExpressions)
    );
    assert!(UriTemplate::parse(&"{a}".repeat(MAX_EXPRESSIONS)).is_ok());
    let name = "n".repeat(MAX_VARNAME_LEN + 1);
    assert_eq!(
        UriTemplate::parse(&format!("{{{name}}}")),
        Err(UriTemplateError::VarNameTooLong { at: 0 })
    );
    assert!(UriTemplate::parse(&format!("{{{}}}", &name[1..])).is_ok());
}

#[test]
fn reports_names_and_formats() {
    let t = UriTemplate::parse("/{a}{/b,a}{?c*}").expect("parses");
    assert_eq!(t.variable_names(), ["a", "b", "c"]);
    assert_eq!(t.as_str(), "/{a}{/b,a}{?c*}");
    assert_eq!(t.to_string(), "/{a}{/b,a}{?c*}");
    assert_eq!(format!("{t:?}"), "UriTemplate(\"/{a}{/b,a}{?c*}\")");
    assert_eq!(t.clone(), t);
    assert_ne!(t, UriTemplate::parse("/{a}").expect("parses"));
}

mod matching;
