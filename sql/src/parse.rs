//! Parsing a Flink SQL script into statements.
//!
//! `sqlparser` parses queries and expressions; Flink's `CREATE TABLE` (with `ROW<…>` types,
//! computed columns `name AS expr`, `WATERMARK FOR col AS expr`, `PRIMARY KEY (…) NOT ENFORCED`
//! and `WITH ('key' = 'value', …)`), which no dialect of it knows, is parsed here with its token
//! stream. Every error names the line and column where it was found.

use std::collections::BTreeMap;
use std::fmt;

use sqlparser::ast;
use sqlparser::dialect::Dialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::value::{MAX_DECIMAL_PRECISION, SqlType};

/// The deepest nesting of expressions and queries a script may have.
const RECURSION_LIMIT: usize = 64;

/// A SQL error: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    /// The line, from 1 (0 when the error has no place in the text).
    pub line: u64,
    /// The column, from 1.
    pub column: u64,
    /// What is wrong.
    pub message: String,
}

impl SqlError {
    /// An error at `at`.
    pub fn at(at: Location, message: impl Into<String>) -> SqlError {
        SqlError { line: at.line, column: at.column, message: message.into() }
    }

    fn from_parser(error: ParserError) -> SqlError {
        let text = match error {
            ParserError::TokenizerError(text) | ParserError::ParserError(text) => text,
            ParserError::RecursionLimitExceeded => {
                return SqlError { line: 0, column: 0, message: "the script nests too deeply".to_string() };
            }
        };
        // sqlparser ends its messages with ` at Line: L, Column: C`.
        let (message, place) = text.rsplit_once(" at Line: ").unwrap_or((&text, ""));
        let (line, column) = place.split_once(", Column: ").unwrap_or(("0", "0"));
        let number = |text: &str| text.trim().parse().unwrap_or(0);
        let message = message.strip_prefix("sql parser error: ").unwrap_or(message);
        SqlError { line: number(line), column: number(column), message: message.to_string() }
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => f.write_str(&self.message),
            line => write!(f, "line {line}, column {}: {}", self.column, self.message),
        }
    }
}

impl std::error::Error for SqlError {}

/// Flink's lexical rules, as far as `sqlparser` is told them: identifiers quoted with backticks.
#[derive(Debug, Default)]
pub struct FlinkDialect;

impl Dialect for FlinkDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch == '_'
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_alphanumeric() || ch == '_' || ch == '$'
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }
}

/// A statement of a script, with where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    /// Where the statement starts.
    pub at: Location,
    /// The statement.
    pub statement: Statement,
}

/// The statements Sluice runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `CREATE TABLE`.
    CreateTable(Box<TableDef>),
    /// `CREATE VIEW name AS query`.
    CreateView {
        /// The view's name.
        name: String,
        /// Its query.
        query: Box<ast::Query>,
    },
    /// `INSERT INTO table query`.
    Insert {
        /// The table written.
        table: String,
        /// What is written.
        query: Box<ast::Query>,
    },
    /// `CREATE [TEMPORARY] [SYSTEM] FUNCTION name AS 'class'`.
    CreateFunction {
        /// The function's name.
        name: String,
        /// The Java class named.
        class: String,
    },
    /// `EXPLAIN [PLAN FOR] INSERT INTO table query`: planned, printed, not run.
    Explain {
        /// The table written.
        table: String,
        /// What is written.
        query: Box<ast::Query>,
    },
}

/// A `CREATE TABLE` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDef {
    /// The table's name.
    pub name: String,
    /// Its columns, in order.
    pub columns: Vec<ColumnDef>,
    /// `WATERMARK FOR column AS expr`.
    pub watermark: Option<(String, ast::Expr, Location)>,
    /// `PRIMARY KEY (…) NOT ENFORCED`.
    pub primary_key: Vec<String>,
    /// `WITH (…)`, keys as written.
    pub options: BTreeMap<String, String>,
}

/// A column of a `CREATE TABLE`.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnDef {
    /// A column the connector provides.
    Physical {
        /// Its name.
        name: String,
        /// Its type.
        ty: SqlType,
    },
    /// `name AS expr`: computed from the physical columns.
    Computed {
        /// Its name.
        name: String,
        /// Its expression.
        expr: Box<ast::Expr>,
        /// Where the expression starts.
        at: Location,
    },
}

impl ColumnDef {
    /// The column's name.
    pub fn name(&self) -> &str {
        match self {
            ColumnDef::Physical { name, .. } | ColumnDef::Computed { name, .. } => name,
        }
    }
}

/// Parses a script of statements separated by `;`.
pub fn parse_script(text: &str) -> Result<Vec<Located>, SqlError> {
    let dialect = FlinkDialect;
    let tokens = Tokenizer::new(&dialect, text)
        .with_unescape(true)
        .tokenize_with_location()
        .map_err(|error| SqlError::from_parser(ParserError::TokenizerError(error.to_string())))?;
    let mut parser =
        Parser::new(&dialect).with_recursion_limit(RECURSION_LIMIT).with_tokens_with_locations(table_arguments(tokens));
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        let next = parser.peek_token();
        if next.token == Token::EOF {
            return Ok(statements);
        }
        let statement = parse_statement(&mut parser).map_err(|error| at_end_if_unplaced(error, text))?;
        statements.push(Located { at: next.span.start, statement });
        let after = parser.peek_token();
        if after.token != Token::SemiColon && after.token != Token::EOF {
            return Err(SqlError::at(
                after.span.start,
                format!("expected `;` after the statement, found {}", after.token),
            ));
        }
    }
}

/// The tokens with the `TABLE` of a window table function's table argument dropped
/// (`TUMBLE(TABLE bid, …)` becomes `TUMBLE(bid, …)`): sqlparser parses no table arguments, and
/// the window functions' first argument is always a table.
fn table_arguments(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let is_word = |token: &Token, words: &[&str]| {
        matches!(token, Token::Word(word) if word.quote_style.is_none()
            && words.iter().any(|name| word.value.eq_ignore_ascii_case(name)))
    };
    let mut kept: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for token in tokens {
        let mut significant = kept.iter().rev().filter(|token| !matches!(token.token, Token::Whitespace(_)));
        let (before, function) = (significant.next(), significant.next());
        let is_table_argument = is_word(&token.token, &["TABLE"])
            && before.is_some_and(|before| before.token == Token::LParen)
            && function.is_some_and(|function| is_word(&function.token, &["TUMBLE", "HOP", "CUMULATE", "SESSION"]));
        if !is_table_argument {
            kept.push(token);
        }
    }
    kept
}

/// sqlparser gives no place for an error at the end of the text: the end is the place.
fn at_end_if_unplaced(mut error: SqlError, text: &str) -> SqlError {
    if error.line == 0 && error.message.ends_with("found: EOF") {
        error.line = text.lines().count().max(1) as u64;
        error.column = text.lines().last().map_or(0, |line| line.chars().count()) as u64 + 1;
    }
    error
}

fn parse_statement(parser: &mut Parser) -> Result<Statement, SqlError> {
    let at = parser.peek_token().span.start;
    let fail = SqlError::from_parser;
    if parser.parse_keywords(&[Keyword::CREATE, Keyword::TABLE]) {
        return parse_create_table(parser).map(|table| Statement::CreateTable(Box::new(table)));
    }
    if let Some(function) = parse_create_function(parser)? {
        return Ok(function);
    }
    if parser.parse_keywords(&[Keyword::CREATE, Keyword::VIEW]) {
        let name = object_name(parser)?;
        parser.expect_keyword(Keyword::AS).map_err(fail)?;
        let query = parser.parse_query().map_err(fail)?;
        return Ok(Statement::CreateView { name, query });
    }
    if parser.parse_keywords(&[Keyword::INSERT, Keyword::INTO]) {
        let table = object_name(parser)?;
        let query = parser.parse_query().map_err(fail)?;
        return Ok(Statement::Insert { table, query });
    }
    if parser.parse_keyword(Keyword::EXPLAIN) {
        let _optional = parser.parse_keywords(&[Keyword::PLAN, Keyword::FOR]);
        let at = parser.peek_token().span.start;
        if !parser.parse_keywords(&[Keyword::INSERT, Keyword::INTO]) {
            let found = parser.peek_token().token;
            return Err(SqlError::at(at, format!("expected INSERT INTO after EXPLAIN, found {found}")));
        }
        let table = object_name(parser)?;
        let query = parser.parse_query().map_err(fail)?;
        return Ok(Statement::Explain { table, query });
    }
    let found = parser.peek_token().token;
    Err(SqlError::at(
        at,
        format!(
            "unsupported statement starting with {found}: Sluice runs CREATE TABLE, CREATE VIEW, INSERT INTO and EXPLAIN"
        ),
    ))
}

/// `CREATE [TEMPORARY] [SYSTEM] FUNCTION [IF NOT EXISTS] name AS 'class' [LANGUAGE JAVA]`, if
/// that comes next.
fn parse_create_function(parser: &mut Parser) -> Result<Option<Statement>, SqlError> {
    let words = parser.peek_tokens::<4>().map(|token| match token {
        Token::Word(word) if word.quote_style.is_none() => word.value.to_ascii_uppercase(),
        _ => String::new(),
    });
    let modifiers = match words.each_ref().map(String::as_str) {
        ["CREATE", "FUNCTION", ..] => 0,
        ["CREATE", "TEMPORARY" | "SYSTEM", "FUNCTION", _] => 1,
        ["CREATE", "TEMPORARY", "SYSTEM", "FUNCTION"] => 2,
        _ => return Ok(None),
    };
    for _ in 0..modifiers + 2 {
        parser.next_token();
    }
    let _if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = object_name(parser)?;
    parser.expect_keyword(Keyword::AS).map_err(SqlError::from_parser)?;
    let class = parser.parse_literal_string().map_err(SqlError::from_parser)?;
    if parse_word(parser, "LANGUAGE") {
        expect_word(parser, "JAVA")?;
    }
    Ok(Some(Statement::CreateFunction { name, class }))
}

fn object_name(parser: &mut Parser) -> Result<String, SqlError> {
    let at = parser.peek_token().span.start;
    let name = parser.parse_object_name(false).map_err(SqlError::from_parser)?;
    match name.0.as_slice() {
        [part] => Ok(part.as_ident().map(|ident| ident.value.clone()).unwrap_or_else(|| part.to_string())),
        _ => Err(SqlError::at(at, format!("unsupported qualified name `{name}`: Sluice has one catalog and database"))),
    }
}

/// Consumes the word `word` (any case) if it comes next.
fn parse_word(parser: &mut Parser, word: &str) -> bool {
    match parser.peek_token().token {
        Token::Word(found) if found.quote_style.is_none() && found.value.eq_ignore_ascii_case(word) => {
            parser.next_token();
            true
        }
        _ => false,
    }
}

fn expect_word(parser: &mut Parser, word: &str) -> Result<(), SqlError> {
    if parse_word(parser, word) {
        return Ok(());
    }
    let found = parser.peek_token();
    Err(SqlError::at(found.span.start, format!("expected {word}, found {}", found.token)))
}

fn expect_token(parser: &mut Parser, token: &Token) -> Result<(), SqlError> {
    parser.expect_token(token).map(|_| ()).map_err(SqlError::from_parser)
}

fn identifier(parser: &mut Parser) -> Result<String, SqlError> {
    parser.parse_identifier().map(|ident| ident.value).map_err(SqlError::from_parser)
}

fn parse_create_table(parser: &mut Parser) -> Result<TableDef, SqlError> {
    let name = object_name(parser)?;
    let mut table =
        TableDef { name, columns: Vec::new(), watermark: None, primary_key: Vec::new(), options: BTreeMap::new() };
    expect_token(parser, &Token::LParen)?;
    loop {
        parse_table_element(parser, &mut table)?;
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    expect_token(parser, &Token::RParen)?;
    if parser.parse_keyword(Keyword::WITH) {
        table.options = parse_options(parser)?;
    }
    Ok(table)
}

fn parse_table_element(parser: &mut Parser, table: &mut TableDef) -> Result<(), SqlError> {
    let at = parser.peek_token().span.start;
    if parse_word(parser, "WATERMARK") {
        expect_word(parser, "FOR")?;
        let column = identifier(parser)?;
        parser.expect_keyword(Keyword::AS).map_err(SqlError::from_parser)?;
        let expr_at = parser.peek_token().span.start;
        let expr = parser.parse_expr().map_err(SqlError::from_parser)?;
        if table.watermark.is_some() {
            return Err(SqlError::at(at, "a table has at most one WATERMARK"));
        }
        table.watermark = Some((column, expr, expr_at));
        return Ok(());
    }
    if parser.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
        expect_token(parser, &Token::LParen)?;
        table.primary_key = parser
            .parse_comma_separated(|p| p.parse_identifier())
            .map_err(SqlError::from_parser)?
            .into_iter()
            .map(|ident| ident.value)
            .collect();
        expect_token(parser, &Token::RParen)?;
        if !parser.parse_keywords(&[Keyword::NOT, Keyword::ENFORCED]) {
            let found = parser.peek_token();
            return Err(SqlError::at(found.span.start, "Flink supports only PRIMARY KEY (…) NOT ENFORCED"));
        }
        return Ok(());
    }
    let name = identifier(parser)?;
    if table.columns.iter().any(|column| column.name() == name) {
        return Err(SqlError::at(at, format!("column `{name}` is declared twice")));
    }
    if parser.parse_keyword(Keyword::AS) {
        let at = parser.peek_token().span.start;
        let expr = parser.parse_expr().map_err(SqlError::from_parser)?;
        table.columns.push(ColumnDef::Computed { name, expr: Box::new(expr), at });
    } else {
        let ty = parse_type(parser)?;
        table.columns.push(ColumnDef::Physical { name, ty });
    }
    Ok(())
}

fn parse_options(parser: &mut Parser) -> Result<BTreeMap<String, String>, SqlError> {
    expect_token(parser, &Token::LParen)?;
    let mut options = BTreeMap::new();
    loop {
        let at = parser.peek_token().span.start;
        let key = parser.parse_literal_string().map_err(SqlError::from_parser)?;
        expect_token(parser, &Token::Eq)?;
        let value = parser.parse_literal_string().map_err(SqlError::from_parser)?;
        if options.insert(key.clone(), value).is_some() {
            return Err(SqlError::at(at, format!("option '{key}' is given twice")));
        }
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    expect_token(parser, &Token::RParen)?;
    Ok(options)
}

/// A column type: `BOOLEAN`, `INT`, `BIGINT`, `DECIMAL(p, s)`, `VARCHAR`/`STRING`,
/// `TIMESTAMP(3)`, `ROW<name type, …>`.
pub fn parse_type(parser: &mut Parser) -> Result<SqlType, SqlError> {
    let token = parser.next_token();
    let at = token.span.start;
    let Token::Word(word) = &token.token else {
        return Err(SqlError::at(at, format!("expected a type, found {}", token.token)));
    };
    match word.value.to_ascii_uppercase().as_str() {
        "BOOLEAN" => Ok(SqlType::Boolean),
        "INT" | "INTEGER" => Ok(SqlType::Int),
        "BIGINT" => Ok(SqlType::BigInt),
        "VARCHAR" | "STRING" => {
            if parser.consume_token(&Token::LParen) {
                number(parser)?;
                expect_token(parser, &Token::RParen)?;
            }
            Ok(SqlType::Varchar)
        }
        "DECIMAL" | "DEC" | "NUMERIC" => parse_decimal(parser, at),
        "TIMESTAMP" => {
            let precision = if parser.consume_token(&Token::LParen) {
                let precision = number(parser)?;
                expect_token(parser, &Token::RParen)?;
                precision
            } else {
                6
            };
            if precision != 3 {
                return Err(SqlError::at(
                    at,
                    format!("unsupported type TIMESTAMP({precision}): Sluice has TIMESTAMP(3)"),
                ));
            }
            Ok(SqlType::Timestamp)
        }
        "ROW" => parse_row_type(parser),
        other => Err(SqlError::at(at, format!("unsupported type {other}"))),
    }
}

fn parse_decimal(parser: &mut Parser, at: Location) -> Result<SqlType, SqlError> {
    let (mut precision, mut scale) = (10, 0);
    if parser.consume_token(&Token::LParen) {
        precision = number(parser)?;
        if parser.consume_token(&Token::Comma) {
            scale = number(parser)?;
        }
        expect_token(parser, &Token::RParen)?;
    }
    if precision == 0 || precision > u64::from(MAX_DECIMAL_PRECISION) || scale > precision {
        return Err(SqlError::at(
            at,
            format!("DECIMAL({precision}, {scale}) is not a type: 1 ≤ precision ≤ 38, scale ≤ precision"),
        ));
    }
    Ok(SqlType::Decimal { precision: precision as u8, scale: scale as u8 })
}

fn parse_row_type(parser: &mut Parser) -> Result<SqlType, SqlError> {
    expect_token(parser, &Token::Lt)?;
    let mut fields: Vec<(String, SqlType)> = Vec::new();
    loop {
        let at = parser.peek_token().span.start;
        let name = identifier(parser)?;
        if fields.iter().any(|(field, _)| *field == name) {
            return Err(SqlError::at(at, format!("field `{name}` is declared twice")));
        }
        let ty = parse_type(parser)?;
        if matches!(ty, SqlType::Row(_)) {
            return Err(SqlError::at(at, "unsupported type: a ROW inside a ROW"));
        }
        fields.push((name, ty));
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    expect_token(parser, &Token::Gt)?;
    Ok(SqlType::Row(fields))
}

fn number(parser: &mut Parser) -> Result<u64, SqlError> {
    let token = parser.next_token();
    match &token.token {
        Token::Number(text, _) => {
            text.parse().map_err(|_| SqlError::at(token.span.start, format!("expected a whole number, found {text}")))
        }
        other => Err(SqlError::at(token.span.start, format!("expected a whole number, found {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_ddl_with_rows_computed_columns_and_a_watermark_parses() {
        let script = "CREATE TABLE events (\n  kind INT,\n  bid ROW<auction BIGINT, price BIGINT, dateTime TIMESTAMP(3)>,\n  \
                      dateTime AS CASE WHEN kind = 2 THEN bid.dateTime END,\n  \
                      WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND\n) WITH ('connector' = 'nexmark');\n\
                      CREATE TABLE out (auction BIGINT, price DECIMAL(23, 3), PRIMARY KEY (auction) NOT ENFORCED) \
                      WITH ('connector' = 'sluice');\n\
                      INSERT INTO out SELECT bid.auction, 0.908 * bid.price FROM events;";
        let statements = parse_script(script).expect("the script parses");
        assert_eq!(statements.len(), 3);
        let Statement::CreateTable(events) = &statements[0].statement else { panic!("a CREATE TABLE") };
        assert_eq!(events.columns.len(), 3);
        assert!(
            matches!(&events.columns[1], ColumnDef::Physical { ty: SqlType::Row(fields), .. } if fields.len() == 3)
        );
        assert!(matches!(&events.columns[2], ColumnDef::Computed { name, .. } if name == "dateTime"));
        assert_eq!(events.watermark.as_ref().map(|(column, _, _)| column.as_str()), Some("dateTime"));
        let Statement::CreateTable(out) = &statements[1].statement else { panic!("a CREATE TABLE") };
        assert_eq!(out.primary_key, vec!["auction".to_string()]);
        assert_eq!(out.options.get("connector").map(String::as_str), Some("sluice"));
        assert_eq!(statements[2].at.line, 8);
    }

    #[test]
    fn errors_name_the_line_and_column_and_what_was_expected() {
        let error = parse_script("CREATE TABLE t (\n  a BIGINT,\n  b FLOAT\n) WITH ('connector' = 'x')").unwrap_err();
        assert_eq!((error.line, error.column), (3, 5), "{error}");
        assert!(error.message.contains("unsupported type FLOAT"), "{error}");
        let error = parse_script("SELECT 1").unwrap_err();
        assert!(error.to_string().starts_with("line 1, column 1: unsupported statement"), "{error}");
        let error = parse_script("INSERT INTO t SELECT a FROM\n  s WHERE").unwrap_err();
        assert_eq!(error.line, 2, "{error}");
        let error = parse_script("CREATE TABLE t (a INT, PRIMARY KEY (a)) WITH ('c' = 'x')").unwrap_err();
        assert!(error.message.contains("NOT ENFORCED"), "{error}");
        let error = parse_script("CREATE TABLE t (a DECIMAL(40, 2))").unwrap_err();
        assert!(error.message.contains("precision"), "{error}");
    }

    #[test]
    fn a_deeply_nested_expression_is_an_error_not_a_stack_overflow() {
        let script = format!("INSERT INTO t SELECT {}1{} FROM s", "(".repeat(10_000), ")".repeat(10_000));
        let error = parse_script(&script).unwrap_err();
        assert!(error.message.contains("nests too deeply"), "{error}");
    }
}
