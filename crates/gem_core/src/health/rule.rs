//! Field rules of the topic-health supervisor: a small expression language evaluated on a
//! flattened message ([`Fields`]).
//!
//! ```text
//! battery_level in 0..1                       inclusive range
//! strength in {0, 1, 2}                       set (numbers, strings or booleans)
//! header.frame_id in {"world", "map"}
//! twist.linear.x < 12.5 && finite(twist.linear.x)
//! nonempty(points)                            an array with at least one element
//! !(temperature > 55) || /estop:enabled       another topic's latest value
//! speed != 0 || /estop:enabled == true        "zero speed is wrong unless the e-stop is on"
//! ```
//!
//! Comparisons are `< <= > >= == !=`; `&&` binds tighter than `||`; `!` negates. A path
//! names a flattened field (`pose.position.x`, `points.3.x`); `/topic:path` reads the
//! latest message of another monitored topic, and is simply false while that topic has
//! not been heard (an unknown is never evidence). A field missing from the topic's own
//! message, or a comparison of a string with a number, fails the rule with a reason: a
//! rule that cannot be checked must not pass silently.

use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

/// One flattened field value.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// Any number (integers, floats, times as seconds).
    Num(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Num(n) => write!(f, "{n}"),
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A flattened message: field path → value. Array elements are `name.<index>`.
pub type Fields = BTreeMap<String, Scalar>;

/// A rule that does not parse: the text, where (character offset) and why.
#[derive(Debug, Error, PartialEq)]
#[error("rule `{text}`: {reason} at character {at}")]
pub struct RuleError {
    /// The rule's text.
    pub text: String,
    /// Character offset of the problem.
    pub at: usize,
    /// What is wrong.
    pub reason: String,
}

/// A field reference: the topic's own message, or another topic's latest one.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldRef {
    /// `None`: the monitored topic itself.
    pub topic: Option<String>,
    /// Flattened path.
    pub path: String,
}

#[derive(Clone, Debug, PartialEq)]
enum Operand {
    Field(FieldRef),
    Lit(Scalar),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Cmp(Operand, Cmp, Operand),
    Range(Operand, f64, f64),
    Set(Operand, Vec<Scalar>),
    NonEmpty(FieldRef),
    Finite(Operand),
    Truthy(Operand),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

/// A parsed rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    text: String,
    expr: Expr,
}

/// Looks up the latest fields of another topic (`None` until it has been heard).
pub type Others<'a> = &'a dyn Fn(&str) -> Option<&'a Fields>;

impl Rule {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let tokens = lex(text)?;
        let mut p = Parser {
            text,
            tokens,
            pos: 0,
        };
        let expr = p.or()?;
        if let Some(t) = p.tokens.get(p.pos) {
            return Err(p.error(t.at, format!("unexpected {:?}", t.tok)));
        }
        Ok(Rule {
            text: text.to_owned(),
            expr,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The other topics this rule reads.
    pub fn topics(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.expr.visit_fields(&mut |f| {
            if let Some(t) = &f.topic {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        });
        out
    }

    /// `Ok(true)` when `fields` satisfies the rule; `Err(reason)` when it cannot be
    /// checked (a missing field, mismatched types), which counts as a failure.
    pub fn check(&self, fields: &Fields, others: Others) -> Result<bool, String> {
        self.expr.eval(fields, others)
    }
}

impl Expr {
    fn visit_fields(&self, f: &mut dyn FnMut(&FieldRef)) {
        let operand = |o: &Operand, f: &mut dyn FnMut(&FieldRef)| {
            if let Operand::Field(r) = o {
                f(r)
            }
        };
        match self {
            Expr::Cmp(a, _, b) => {
                operand(a, f);
                operand(b, f);
            }
            Expr::Range(a, ..) | Expr::Set(a, _) | Expr::Finite(a) | Expr::Truthy(a) => {
                operand(a, f)
            }
            Expr::NonEmpty(r) => f(r),
            Expr::Not(e) => e.visit_fields(f),
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.visit_fields(f);
                b.visit_fields(f);
            }
        }
    }

    fn eval(&self, own: &Fields, others: Others) -> Result<bool, String> {
        let value = |o: &Operand| -> Result<Option<Scalar>, String> {
            match o {
                Operand::Lit(v) => Ok(Some(v.clone())),
                Operand::Field(r) => lookup(r, own, others),
            }
        };
        Ok(match self {
            Expr::Cmp(a, op, b) => match (value(a)?, value(b)?) {
                (Some(x), Some(y)) => compare(&x, *op, &y)?,
                _ => false,
            },
            Expr::Range(a, lo, hi) => match value(a)? {
                Some(Scalar::Num(x)) => *lo <= x && x <= *hi,
                Some(other) => return Err(format!("{other} is not a number")),
                None => false,
            },
            Expr::Set(a, set) => match value(a)? {
                Some(x) => set
                    .iter()
                    .any(|s| matches!(compare(&x, Cmp::Eq, s), Ok(true))),
                None => false,
            },
            Expr::Finite(a) => match value(a)? {
                Some(Scalar::Num(x)) => x.is_finite(),
                Some(other) => return Err(format!("{other} is not a number")),
                None => false,
            },
            Expr::Truthy(a) => match value(a)? {
                Some(Scalar::Bool(b)) => b,
                Some(other) => return Err(format!("{other} is not a boolean")),
                None => false,
            },
            Expr::NonEmpty(r) => {
                let prefix = format!("{}.", r.path);
                let fields = match &r.topic {
                    None => Some(own),
                    Some(t) => others(t),
                };
                fields.is_some_and(|f| {
                    f.range(prefix.clone()..)
                        .next()
                        .is_some_and(|(k, _)| k.starts_with(&prefix))
                })
            }
            Expr::Not(e) => !e.eval(own, others)?,
            Expr::And(a, b) => a.eval(own, others)? && b.eval(own, others)?,
            Expr::Or(a, b) => a.eval(own, others)? || b.eval(own, others)?,
        })
    }
}

/// The value of a field reference: an own field must exist; another topic's may not yet.
fn lookup(r: &FieldRef, own: &Fields, others: Others) -> Result<Option<Scalar>, String> {
    match &r.topic {
        None => own
            .get(&r.path)
            .cloned()
            .map(Some)
            .ok_or_else(|| format!("field {} is not in the message", r.path)),
        Some(t) => Ok(others(t).and_then(|f| f.get(&r.path).cloned())),
    }
}

fn compare(a: &Scalar, op: Cmp, b: &Scalar) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Scalar::Num(x), Scalar::Num(y)) => x.partial_cmp(y),
        (Scalar::Str(x), Scalar::Str(y)) => Some(x.cmp(y)),
        (Scalar::Bool(x), Scalar::Bool(y)) => Some(x.cmp(y)),
        // ROS bools travel as uint8: let `enabled == 1` mean what it says.
        (Scalar::Bool(x), Scalar::Num(y)) => f64::from(u8::from(*x)).partial_cmp(y),
        (Scalar::Num(x), Scalar::Bool(y)) => x.partial_cmp(&f64::from(u8::from(*y))),
        _ => return Err(format!("cannot compare {a} with {b}")),
    };
    // NaN compares false with everything, `!=` included: a NaN is never "fine".
    let Some(ord) = ord else { return Ok(false) };
    Ok(match op {
        Cmp::Lt => ord == Ordering::Less,
        Cmp::Le => ord != Ordering::Greater,
        Cmp::Gt => ord == Ordering::Greater,
        Cmp::Ge => ord != Ordering::Less,
        Cmp::Eq => ord == Ordering::Equal,
        Cmp::Ne => ord != Ordering::Equal,
    })
}

// ----- lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Path(String),
    Topic(String, String),
    Num(f64),
    Str(String),
    Bool(bool),
    Cmp(Cmp),
    And,
    Or,
    Not,
    In,
    DotDot,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Comma,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    at: usize,
}

fn lex(text: &str) -> Result<Vec<Token>, RuleError> {
    let chars: Vec<char> = text.chars().collect();
    let err = |at: usize, reason: String| RuleError {
        text: text.to_owned(),
        at,
        reason,
    };
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    while i < chars.len() {
        let c = chars[i];
        let at = i;
        let next = chars.get(i + 1).copied();
        let two = |t: Tok| (t, 2);
        let (tok, len) = match (c, next) {
            (c, _) if c.is_whitespace() => {
                i += 1;
                continue;
            }
            ('<', Some('=')) => two(Tok::Cmp(Cmp::Le)),
            ('>', Some('=')) => two(Tok::Cmp(Cmp::Ge)),
            ('=', Some('=')) => two(Tok::Cmp(Cmp::Eq)),
            ('!', Some('=')) => two(Tok::Cmp(Cmp::Ne)),
            ('&', Some('&')) => two(Tok::And),
            ('|', Some('|')) => two(Tok::Or),
            ('.', Some('.')) => two(Tok::DotDot),
            ('<', _) => (Tok::Cmp(Cmp::Lt), 1),
            ('>', _) => (Tok::Cmp(Cmp::Gt), 1),
            ('!', _) => (Tok::Not, 1),
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            ('{', _) => (Tok::LBrace, 1),
            ('}', _) => (Tok::RBrace, 1),
            (',', _) => (Tok::Comma, 1),
            ('"' | '\'', _) => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&d| d == c)
                    .ok_or_else(|| err(at, "unterminated string".into()))?;
                let s: String = chars[i + 1..i + 1 + end].iter().collect();
                (Tok::Str(s), end + 2)
            }
            (c, n) if c.is_ascii_digit() || (c == '-' && n.is_some_and(|d| d.is_ascii_digit())) => {
                let mut j = i + 1;
                while j < chars.len() {
                    let d = chars[j];
                    let part_of_number = d.is_ascii_digit()
                        || matches!(d, 'e' | 'E')
                        || (matches!(d, '+' | '-') && matches!(chars[j - 1], 'e' | 'E'))
                        || (d == '.' && chars.get(j + 1).is_some_and(|e| e.is_ascii_digit()));
                    if !part_of_number {
                        break;
                    }
                    j += 1;
                }
                let s: String = chars[i..j].iter().collect();
                let n = s
                    .parse::<f64>()
                    .map_err(|_| err(at, format!("bad number {s}")))?;
                (Tok::Num(n), j - i)
            }
            ('/', _) => {
                let mut j = i + 1;
                while j < chars.len()
                    && (chars[j].is_ascii_alphanumeric() || "_/".contains(chars[j]))
                {
                    j += 1;
                }
                let topic: String = chars[i..j].iter().collect();
                if chars.get(j) != Some(&':') {
                    return Err(err(j, format!("expected `:field` after topic {topic}")));
                }
                let mut k = j + 1;
                while k < chars.len() && word(chars[k]) {
                    k += 1;
                }
                let path: String = chars[j + 1..k].iter().collect();
                if path.is_empty() {
                    return Err(err(k, format!("expected a field after {topic}:")));
                }
                (Tok::Topic(topic, path), k - i)
            }
            (c, _) if c.is_ascii_alphabetic() || c == '_' => {
                let mut j = i + 1;
                while j < chars.len() && word(chars[j]) {
                    j += 1;
                }
                let w: String = chars[i..j].iter().collect();
                let tok = match w.as_str() {
                    "in" => Tok::In,
                    "true" => Tok::Bool(true),
                    "false" => Tok::Bool(false),
                    _ => Tok::Path(w),
                };
                (tok, j - i)
            }
            (c, _) => return Err(err(at, format!("unexpected character {c:?}"))),
        };
        out.push(Token { tok, at });
        i += len;
    }
    Ok(out)
}

// ----- parser: or := and ('||' and)* ; and := unary ('&&' unary)* ;
// unary := '!' unary | '(' or ')' | atom

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, at: usize, reason: String) -> RuleError {
        RuleError {
            text: self.text.to_owned(),
            at,
            reason,
        }
    }

    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.tok)
    }

    fn here(&self) -> usize {
        self.tokens
            .get(self.pos)
            .map_or(self.text.chars().count(), |t| t.at)
    }

    fn next(&mut self) -> Result<Tok, RuleError> {
        let t = self
            .tokens
            .get(self.pos)
            .map(|t| t.tok.clone())
            .ok_or_else(|| self.error(self.here(), "unexpected end of rule".into()))?;
        self.pos += 1;
        Ok(t)
    }

    fn expect(&mut self, want: Tok, what: &str) -> Result<(), RuleError> {
        let at = self.here();
        match self.next()? {
            t if t == want => Ok(()),
            t => Err(self.error(at, format!("expected {what}, found {t:?}"))),
        }
    }

    /// A left-associative chain of `op`: `operand (op operand)*`, joined by `join`.
    fn chain(
        &mut self,
        op: Tok,
        operand: fn(&mut Self) -> Result<Expr, RuleError>,
        join: fn(Box<Expr>, Box<Expr>) -> Expr,
    ) -> Result<Expr, RuleError> {
        let mut e = operand(self)?;
        while self.peek() == Some(&op) {
            self.pos += 1;
            e = join(Box::new(e), Box::new(operand(self)?));
        }
        Ok(e)
    }

    fn or(&mut self) -> Result<Expr, RuleError> {
        self.chain(Tok::Or, Self::and, Expr::Or)
    }

    fn and(&mut self) -> Result<Expr, RuleError> {
        self.chain(Tok::And, Self::unary, Expr::And)
    }

    fn unary(&mut self) -> Result<Expr, RuleError> {
        match self.peek() {
            Some(Tok::Not) => {
                self.pos += 1;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let e = self.or()?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(e)
            }
            _ => self.atom(),
        }
    }

    fn call(&mut self, name: &str) -> Result<Option<Expr>, RuleError> {
        if !matches!(name, "nonempty" | "finite") || self.peek() != Some(&Tok::LParen) {
            return Ok(None);
        }
        self.pos += 1;
        let at = self.here();
        let arg = self.operand()?;
        self.expect(Tok::RParen, "`)`")?;
        Ok(Some(match (name, arg) {
            ("nonempty", Operand::Field(r)) => Expr::NonEmpty(r),
            ("nonempty", _) => return Err(self.error(at, "nonempty() takes a field".into())),
            (_, arg) => Expr::Finite(arg),
        }))
    }

    fn atom(&mut self) -> Result<Expr, RuleError> {
        if let Some(Tok::Path(name)) = self.peek().cloned() {
            self.pos += 1;
            if let Some(e) = self.call(&name)? {
                return Ok(e);
            }
            self.pos -= 1;
        }
        let left = self.operand()?;
        let at = self.here();
        match self.peek().cloned() {
            Some(Tok::Cmp(op)) => {
                self.pos += 1;
                Ok(Expr::Cmp(left, op, self.operand()?))
            }
            Some(Tok::In) => {
                self.pos += 1;
                self.in_clause(left)
            }
            // A bare field: a boolean that must be true (`/estop:enabled`).
            _ if matches!(left, Operand::Field(_)) => Ok(Expr::Truthy(left)),
            _ => Err(self.error(at, "expected a comparison, `in`, or a field".into())),
        }
    }

    fn in_clause(&mut self, left: Operand) -> Result<Expr, RuleError> {
        let at = self.here();
        match self.next()? {
            Tok::LBrace => {
                let mut set = Vec::new();
                loop {
                    let at = self.here();
                    match self.next()? {
                        Tok::Num(n) => set.push(Scalar::Num(n)),
                        Tok::Str(s) => set.push(Scalar::Str(s)),
                        Tok::Bool(b) => set.push(Scalar::Bool(b)),
                        t => return Err(self.error(at, format!("expected a value, found {t:?}"))),
                    }
                    let at = self.here();
                    match self.next()? {
                        Tok::Comma => continue,
                        Tok::RBrace => break,
                        t => {
                            return Err(self.error(at, format!("expected `,` or `}}`, found {t:?}")))
                        }
                    }
                }
                Ok(Expr::Set(left, set))
            }
            Tok::Num(lo) => {
                self.expect(Tok::DotDot, "`..`")?;
                let at_hi = self.here();
                match self.next()? {
                    Tok::Num(hi) if hi >= lo => Ok(Expr::Range(left, lo, hi)),
                    Tok::Num(hi) => Err(self.error(at_hi, format!("empty range {lo}..{hi}"))),
                    t => Err(self.error(at_hi, format!("expected a number, found {t:?}"))),
                }
            }
            t => Err(self.error(at, format!("expected `{{` or a range `a..b`, found {t:?}"))),
        }
    }

    fn operand(&mut self) -> Result<Operand, RuleError> {
        let at = self.here();
        Ok(match self.next()? {
            Tok::Path(path) => Operand::Field(FieldRef { topic: None, path }),
            Tok::Topic(topic, path) => Operand::Field(FieldRef {
                topic: Some(topic),
                path,
            }),
            Tok::Num(n) => Operand::Lit(Scalar::Num(n)),
            Tok::Str(s) => Operand::Lit(Scalar::Str(s)),
            Tok::Bool(b) => Operand::Lit(Scalar::Bool(b)),
            t => return Err(self.error(at, format!("expected a field or a value, found {t:?}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, Scalar)]) -> Fields {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn none(_: &str) -> Option<&'static Fields> {
        None
    }

    fn check(rule: &str, f: &Fields) -> Result<bool, String> {
        Rule::parse(rule).unwrap().check(f, &none)
    }

    /// Asserts each rule's verdict on `f`.
    fn verdicts(f: &Fields, cases: &[(&str, bool)]) {
        for &(rule, want) in cases {
            assert_eq!(check(rule, f), Ok(want), "{rule}");
        }
    }

    use Scalar::{Bool, Num, Str};

    #[test]
    fn comparisons() {
        verdicts(
            &fields(&[("x", Num(2.0))]),
            &[
                ("x < 3", true),
                ("x <= 2", true),
                ("x > 2", false),
                ("x >= 2.0", true),
                ("x == 2", true),
                ("x != 2", false),
                ("3 > x", true),
                ("x > -1e1", true),
            ],
        );
    }

    #[test]
    fn inclusive_range_and_its_edges() {
        for (x, want) in [(0.0, true), (1.0, true), (1.0001, false), (-0.1, false)] {
            verdicts(&fields(&[("b", Num(x))]), &[("b in 0..1", want)]);
        }
    }

    #[test]
    fn nan_fails_every_numeric_check() {
        verdicts(
            &fields(&[("v", Num(f64::NAN))]),
            &[
                ("v in -10..10", false),
                ("v == v", false),
                ("v != 1", false),
                ("finite(v)", false),
                ("v < 1 || v >= 1", false),
            ],
        );
    }

    #[test]
    fn sets_of_numbers_strings_and_booleans() {
        verdicts(
            &fields(&[
                ("s", Num(2.0)),
                ("frame", Str("map".into())),
                ("on", Bool(true)),
            ]),
            &[
                ("s in {0, 1, 2}", true),
                ("s in {0, 1}", false),
                ("frame in {\"world\", 'map'}", true),
                ("on in {true}", true),
            ],
        );
    }

    #[test]
    fn nonempty_looks_for_array_elements() {
        verdicts(
            &fields(&[("points.0.x", Num(1.0)), ("pointsx", Num(0.0))]),
            &[
                ("nonempty(points)", true),
                ("nonempty(poses)", false),
                ("nonempty(point)", false),
            ],
        );
    }

    #[test]
    fn precedence_and_parentheses() {
        verdicts(
            &fields(&[("a", Num(1.0)), ("b", Num(0.0))]),
            &[
                ("a == 1 || b == 1 && a == 0", true),
                ("(a == 1 || b == 1) && a == 0", false),
                ("!(a == 1)", false),
                ("!!(a == 1)", true),
            ],
        );
    }

    #[test]
    fn other_topics_are_read_and_unknown_means_false() {
        let rule = Rule::parse("speed != 0 || /estop:enabled").unwrap();
        assert_eq!(rule.topics(), vec!["/estop".to_string()]);
        let stopped = fields(&[("speed", Num(0.0))]);
        let pressed = fields(&[("enabled", Bool(true))]);
        let released = fields(&[("enabled", Bool(false))]);
        assert_eq!(rule.check(&stopped, &|_| Some(&pressed)), Ok(true));
        assert_eq!(rule.check(&stopped, &|_| Some(&released)), Ok(false));
        assert_eq!(rule.check(&stopped, &|_| None), Ok(false));
        let moving = fields(&[("speed", Num(2.8))]);
        assert_eq!(rule.check(&moving, &|_| None), Ok(true));
    }

    #[test]
    fn missing_own_field_is_a_reason_not_a_pass() {
        let e = check(
            "battery_levl in 0..1",
            &fields(&[("battery_level", Num(0.5))]),
        );
        assert_eq!(e, Err("field battery_levl is not in the message".into()));
    }

    #[test]
    fn mixing_strings_and_numbers_is_a_reason() {
        let e = check("frame < 3", &fields(&[("frame", Str("map".into()))])).unwrap_err();
        assert!(e.contains("cannot compare"), "{e}");
    }

    #[test]
    fn ros_bools_compare_with_one_and_zero() {
        verdicts(
            &fields(&[("enabled", Bool(true))]),
            &[("enabled == 1", true)],
        );
    }

    #[test]
    fn parse_errors_say_where() {
        for (rule, at) in [
            ("x <", 3),
            ("x in 2..1", 8),
            ("x in {1, 2", 10),
            ("x == 'open", 5),
            ("(x > 1", 6),
            ("x > 1 y", 6),
            ("/estop enabled", 6),
            ("x # 1", 2),
        ] {
            let e = Rule::parse(rule).unwrap_err();
            assert_eq!(e.at, at, "{rule}: {e}");
        }
    }

    #[test]
    fn paths_with_indices() {
        verdicts(
            &fields(&[("points.3.x", Num(4.0))]),
            &[("points.3.x == 4", true)],
        );
    }
}
