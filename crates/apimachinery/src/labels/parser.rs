//! The label selector query-string grammar: a lexer over `= == != ! ( ) ,` and identifiers,
//! and a recursive-descent parser producing validated [`Requirement`]s.

use super::{Operator, Requirement, SelectorError};

/// Parses `app=web, tier in (fe,be), !canary` into its requirements (unsorted).
pub(super) fn parse_requirements(input: &str) -> Result<Vec<Requirement>, SelectorError> {
    let tokens = lex(input)?;
    let mut parser = Parser {
        tokens,
        position: 0,
    };
    let mut requirements = Vec::new();
    if parser.peek() == &Token::End {
        return Ok(requirements);
    }
    loop {
        requirements.push(parser.requirement()?);
        match parser.next() {
            Token::End => return Ok(requirements),
            Token::Comma => {}
            other => {
                return Err(SelectorError::parse(format!(
                    "found '{}', expected: ',' or 'end of string'",
                    other.literal()
                )));
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Identifier(String),
    Comma,
    Equals,
    DoubleEquals,
    NotEquals,
    Bang,
    OpenParen,
    CloseParen,
    End,
}

impl Token {
    fn literal(&self) -> &str {
        match self {
            Token::Identifier(s) => s,
            Token::Comma => ",",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::Bang => "!",
            Token::OpenParen => "(",
            Token::CloseParen => ")",
            Token::End => "",
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '<' | '>')
}

fn lex(input: &str) -> Result<Vec<Token>, SelectorError> {
    let mut tokens = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if is_special(c) {
            chars.next();
            let followed_by_equals = chars.peek() == Some(&'=');
            let token = match c {
                '=' if followed_by_equals => {
                    chars.next();
                    Token::DoubleEquals
                }
                '=' => Token::Equals,
                '!' if followed_by_equals => {
                    chars.next();
                    Token::NotEquals
                }
                '!' => Token::Bang,
                '(' => Token::OpenParen,
                ')' => Token::CloseParen,
                ',' => Token::Comma,
                other => {
                    return Err(SelectorError::parse(format!(
                        "found '{other}', expected: one of '=', '==', '!=', 'in', 'notin', '!', '(', ')', ','"
                    )));
                }
            };
            tokens.push(token);
            continue;
        }
        let mut identifier = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || is_special(c) {
                break;
            }
            identifier.push(c);
            chars.next();
        }
        tokens.push(Token::Identifier(identifier));
    }
    tokens.push(Token::End);
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    position: usize,
}

const OPERATORS_EXPECTED: &str = "in, notin, =, ==, !=";

impl Parser {
    fn peek(&self) -> &Token {
        self.tokens.get(self.position).unwrap_or(&Token::End)
    }

    fn next(&mut self) -> Token {
        let token = self.peek().clone();
        self.position += 1;
        token
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let (key, negated) = match self.next() {
            Token::Bang => match self.next() {
                Token::Identifier(key) => (key, true),
                other => {
                    return Err(SelectorError::parse(format!(
                        "found '{}', expected: identifier after '!'",
                        other.literal()
                    )));
                }
            },
            Token::Identifier(key) => (key, false),
            other => {
                return Err(SelectorError::parse(format!(
                    "found '{}', expected: identifier",
                    other.literal()
                )));
            }
        };
        let at_clause_end = matches!(self.peek(), Token::Comma | Token::End);
        if negated {
            if !at_clause_end {
                return Err(SelectorError::parse(format!(
                    "found '{}', expected: ',' or 'end of string' after '!{key}'",
                    self.peek().literal()
                )));
            }
            return Requirement::new(key, Operator::DoesNotExist, []).map_err(SelectorError::parse);
        }
        if at_clause_end {
            return Requirement::new(key, Operator::Exists, []).map_err(SelectorError::parse);
        }
        let operator = match self.next() {
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::NotEquals => Operator::NotEquals,
            Token::Identifier(word) if word == "in" => Operator::In,
            Token::Identifier(word) if word == "notin" => Operator::NotIn,
            other => {
                return Err(SelectorError::parse(format!(
                    "found '{}', expected: {OPERATORS_EXPECTED}",
                    other.literal()
                )));
            }
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_list()?,
            _ => vec![self.single_value()?],
        };
        Requirement::new(key, operator, values).map_err(SelectorError::parse)
    }

    /// `a=` means the empty value, so a missing identifier is allowed.
    fn single_value(&mut self) -> Result<String, SelectorError> {
        match self.peek().clone() {
            Token::Identifier(value) => {
                self.position += 1;
                Ok(value)
            }
            Token::Comma | Token::End => Ok(String::new()),
            other => Err(SelectorError::parse(format!(
                "found '{}', expected: identifier",
                other.literal()
            ))),
        }
    }

    /// `( [v] (, [v])* )`; an omitted value is the empty value, as Kubernetes reads it.
    fn value_list(&mut self) -> Result<Vec<String>, SelectorError> {
        let open = self.next();
        if open != Token::OpenParen {
            return Err(SelectorError::parse(format!(
                "found '{}', expected: '('",
                open.literal()
            )));
        }
        let mut values = Vec::new();
        loop {
            let value = match self.peek().clone() {
                Token::Identifier(value) => {
                    self.position += 1;
                    value
                }
                Token::Comma | Token::CloseParen => String::new(),
                other => {
                    return Err(SelectorError::parse(format!(
                        "found '{}', expected: ',', ')' or identifier",
                        other.literal()
                    )));
                }
            };
            values.push(value);
            match self.next() {
                Token::Comma => {}
                Token::CloseParen => return Ok(values),
                other => {
                    return Err(SelectorError::parse(format!(
                        "found '{}', expected: ',' or ')'",
                        other.literal()
                    )));
                }
            }
        }
    }
}
