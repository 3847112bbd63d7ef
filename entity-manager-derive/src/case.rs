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
    // `self` would make `Self`, a keyword that cannot name a variant
    if out == "Self" {
        out.push('_');
    }
    first.is_ascii_alphabetic().then_some(out)
}

/// `nameKey` → `name_key`, `HTTPServer` → `http_server`, `first-name` → `first_name`: the Rust
/// name to suggest for a name written as a string.
pub(crate) fn snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &ch) in chars.iter().enumerate() {
        if ch.is_uppercase() {
            let previous = i.checked_sub(1).and_then(|p| chars.get(p));
            let next = chars.get(i + 1);
            let boundary = previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
                || (previous.is_some_and(|p| p.is_uppercase())
                    && next.is_some_and(|n| n.is_lowercase()));
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(ch.to_lowercase());
        } else if ch == '-' || ch == ' ' || ch == '.' {
            out.push('_');
        } else {
            out.push(ch);
        }
    }
    out
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
        assert_eq!(variant("self").as_deref(), Some("Self_"));
        assert_eq!(lower_camel("OrderLine"), "orderLine");
        assert_eq!(snake("nameKey"), "name_key");
        assert_eq!(snake("HTTPServer"), "http_server");
        assert_eq!(snake("first-name"), "first_name");
        assert_eq!(snake("userID"), "user_id");
        assert_eq!(snake("already_snake"), "already_snake");
    }
}
