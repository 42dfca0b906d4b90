//! Every tree-sitter node kind and field name mpicast uses, in one place (tree-sitter-c and the C
//! subset of tree-sitter-cpp share them). Only src/frontend/lower.rs reads these.

pub const FUNCTION_DEFINITION: &str = "function_definition";
pub const DECLARATION: &str = "declaration";
pub const INIT_DECLARATOR: &str = "init_declarator";
pub const FUNCTION_DECLARATOR: &str = "function_declarator";
pub const POINTER_DECLARATOR: &str = "pointer_declarator";
pub const ARRAY_DECLARATOR: &str = "array_declarator";
pub const PARENTHESIZED_DECLARATOR: &str = "parenthesized_declarator";
pub const ATTRIBUTED_DECLARATOR: &str = "attributed_declarator";
pub const REFERENCE_DECLARATOR: &str = "reference_declarator";
pub const ABSTRACT_POINTER_DECLARATOR: &str = "abstract_pointer_declarator";
pub const ABSTRACT_ARRAY_DECLARATOR: &str = "abstract_array_declarator";
pub const PARAMETER_DECLARATION: &str = "parameter_declaration";
pub const TYPE_DEFINITION: &str = "type_definition";
pub const STRUCT_SPECIFIER: &str = "struct_specifier";
pub const UNION_SPECIFIER: &str = "union_specifier";
pub const ENUM_SPECIFIER: &str = "enum_specifier";
pub const ENUMERATOR: &str = "enumerator";
pub const FIELD_DECLARATION: &str = "field_declaration";
pub const PRIMITIVE_TYPE: &str = "primitive_type";
pub const SIZED_TYPE_SPECIFIER: &str = "sized_type_specifier";
pub const TYPE_IDENTIFIER: &str = "type_identifier";
pub const TYPE_QUALIFIER: &str = "type_qualifier";
pub const LINKAGE_SPECIFICATION: &str = "linkage_specification";
pub const DECLARATION_LIST: &str = "declaration_list";
pub const NAMESPACE_DEFINITION: &str = "namespace_definition";

pub const PREPROC_DEF: &str = "preproc_def";
pub const PREPROC_IF: &str = "preproc_if";
pub const PREPROC_IFDEF: &str = "preproc_ifdef";
pub const PREPROC_ELSE: &str = "preproc_else";
pub const PREPROC_ELIF: &str = "preproc_elif";
pub const PREPROC_ELIFDEF: &str = "preproc_elifdef";
pub const PREPROC_CALL: &str = "preproc_call";
pub const COMMENT: &str = "comment";

pub const COMPOUND_STATEMENT: &str = "compound_statement";
pub const EXPRESSION_STATEMENT: &str = "expression_statement";
pub const IF_STATEMENT: &str = "if_statement";
pub const ELSE_CLAUSE: &str = "else_clause";
pub const FOR_STATEMENT: &str = "for_statement";
pub const WHILE_STATEMENT: &str = "while_statement";
pub const DO_STATEMENT: &str = "do_statement";
pub const SWITCH_STATEMENT: &str = "switch_statement";
pub const CASE_STATEMENT: &str = "case_statement";
pub const RETURN_STATEMENT: &str = "return_statement";
pub const BREAK_STATEMENT: &str = "break_statement";
pub const CONTINUE_STATEMENT: &str = "continue_statement";
pub const GOTO_STATEMENT: &str = "goto_statement";
pub const LABELED_STATEMENT: &str = "labeled_statement";
pub const CONDITION_CLAUSE: &str = "condition_clause";

pub const IDENTIFIER: &str = "identifier";
pub const FIELD_IDENTIFIER: &str = "field_identifier";
pub const NUMBER_LITERAL: &str = "number_literal";
pub const STRING_LITERAL: &str = "string_literal";
pub const CONCATENATED_STRING: &str = "concatenated_string";
pub const CHAR_LITERAL: &str = "char_literal";
pub const TRUE: &str = "true";
pub const FALSE: &str = "false";
pub const NULL: &str = "null";
pub const NULLPTR: &str = "nullptr";
pub const BINARY_EXPRESSION: &str = "binary_expression";
pub const UNARY_EXPRESSION: &str = "unary_expression";
pub const UPDATE_EXPRESSION: &str = "update_expression";
pub const ASSIGNMENT_EXPRESSION: &str = "assignment_expression";
pub const CALL_EXPRESSION: &str = "call_expression";
pub const SUBSCRIPT_EXPRESSION: &str = "subscript_expression";
pub const FIELD_EXPRESSION: &str = "field_expression";
pub const POINTER_EXPRESSION: &str = "pointer_expression";
pub const CAST_EXPRESSION: &str = "cast_expression";
pub const PARENTHESIZED_EXPRESSION: &str = "parenthesized_expression";
pub const CONDITIONAL_EXPRESSION: &str = "conditional_expression";
pub const SIZEOF_EXPRESSION: &str = "sizeof_expression";
pub const COMMA_EXPRESSION: &str = "comma_expression";
pub const INITIALIZER_LIST: &str = "initializer_list";
pub const QUALIFIED_IDENTIFIER: &str = "qualified_identifier";

pub const ERROR: &str = "ERROR";
/// Anonymous tokens.
pub const COLON: &str = ":";
pub const ELSE: &str = "else";
pub const DO: &str = "do";

// Field names.
pub const F_TYPE: &str = "type";
pub const F_DECLARATOR: &str = "declarator";
pub const F_VALUE: &str = "value";
pub const F_BODY: &str = "body";
pub const F_NAME: &str = "name";
pub const F_PARAMETERS: &str = "parameters";
pub const F_CONDITION: &str = "condition";
pub const F_CONSEQUENCE: &str = "consequence";
pub const F_ALTERNATIVE: &str = "alternative";
pub const F_INITIALIZER: &str = "initializer";
pub const F_UPDATE: &str = "update";
pub const F_LEFT: &str = "left";
pub const F_RIGHT: &str = "right";
pub const F_OPERATOR: &str = "operator";
pub const F_ARGUMENT: &str = "argument";
pub const F_ARGUMENTS: &str = "arguments";
pub const F_FUNCTION: &str = "function";
pub const F_INDEX: &str = "index";
pub const F_INDICES: &str = "indices";
pub const F_FIELD: &str = "field";
pub const F_DIRECTIVE: &str = "directive";
