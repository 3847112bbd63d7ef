//! serde's `rename_all` rules, applied to `snake_case` Rust identifiers, so that stored attribute
//! names match what serde writes.

/// Renames a `snake_case` field name by a serde `rename_all` rule; `None` for an unknown rule.
pub(crate) fn rename(field: &str, rule: &str) -> Option<String> {
    let field = field.strip_prefix("r#").unwrap_or(field);
    Some(match rule {
        "lowercase" | "snake_case" => field.to_owned(),
        "UPPERCASE" | "SCREAMING_SNAKE_CASE" => field.to_ascii_uppercase(),
        "PascalCase" => pascal(field),
        "camelCase" => {
            let pascal = pascal(field);
            let mut chars = pascal.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_lowercase().to_string() + chars.as_str()
            })
        }
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.replace('_', "-").to_ascii_uppercase(),
        _ => return None,
    })
}

/// `first_name` → `FirstName`, as serde's `PascalCase` does.
pub(crate) fn pascal(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = true;
    for ch in field.chars() {
        if ch == '_' {
            upper = true;
        } else if upper {
            out.push(ch.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(ch);
        }
    }
    out
}

/// `userBeneficiaryCreated` → `UserBeneficiaryCreated`; `first-name` → `FirstName`: an enum
/// variant for an index name. `None` when no identifier can be made.
pub(crate) fn variant(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            if upper {
                out.push(ch.to_ascii_uppercase());
                upper = false;
            } else {
                out.push(ch);
            }
        } else {
            upper = true;
        }
    }
    let first = out.chars().next()?;
    first.is_ascii_alphabetic().then_some(out)
}

/// `OrderLine` → `orderLine`: the default entity token.
pub(crate) fn lower_camel(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_lowercase().to_string() + chars.as_str()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_rules() {
        assert_eq!(
            rename("first_name_canonical", "camelCase").as_deref(),
            Some("firstNameCanonical")
        );
        assert_eq!(
            rename("first_name", "PascalCase").as_deref(),
            Some("FirstName")
        );
        assert_eq!(
            rename("first_name", "SCREAMING-KEBAB-CASE").as_deref(),
            Some("FIRST-NAME")
        );
        assert_eq!(rename("r#type", "camelCase").as_deref(), Some("type"));
        assert_eq!(rename("x", "Camel"), None);
        assert_eq!(
            variant("userBeneficiaryCreated").as_deref(),
            Some("UserBeneficiaryCreated")
        );
        assert_eq!(variant("by-sk").as_deref(), Some("BySk"));
        assert_eq!(variant("9lives"), None);
        assert_eq!(lower_camel("OrderLine"), "orderLine");
    }
}
