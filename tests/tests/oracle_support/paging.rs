//! Every way of paging a query, checked against the model's list: `page` by tokens, `page`
//! resumed from every token, `pages` from the start and from a token, and `stream`.

use std::collections::{HashMap, HashSet};

use entity_manager::Item;
use entity_manager::query::QueryPageResult;
use entity_manager::query::untyped::{Indexed, MultiQuery, Query};
use entity_manager::store::Store;
use futures::TryStreamExt as _;

use super::Way;
use super::model::Hit;

thread_local! {
    /// Whether `pages` and `stream` are checked alone, without paging by tokens first (for the
    /// saved cases: which ways fail).
    pub(crate) static ONLY_THE_WAY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A record's table keys: (hash key, range key).
pub(crate) type Key = (String, String);

/// The table keys of an item.
pub(crate) fn key(item: &Item) -> Key {
    let text = |name: &str| match item.get(name) {
        Some(entity_manager::AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    };
    (text("hashKey"), text("rangeKey"))
}

/// What a projected query returns of each record: the projected attributes it has, and none of
/// `absent` (attributes neither projected nor a key).
pub(crate) struct Projected<'a> {
    pub(crate) attributes: &'a [&'a str],
    pub(crate) absent: &'a [&'a str],
}

/// A returned item against the stored one: equal, or (projected) a part of it holding the
/// projected attributes and none of the absent ones.
fn check_item(
    item: &Item,
    stored: &HashMap<Key, Item>,
    projection: Option<&Projected<'_>>,
) -> Result<(), String> {
    let k = key(item);
    let Some(whole) = stored.get(&k) else {
        return Err(format!("{k:?} returned, never stored: {item:?}"));
    };
    let Some(p) = projection else {
        return if whole == item {
            Ok(())
        } else {
            Err(format!("{k:?} returned as {item:?}, stored as {whole:?}"))
        };
    };
    for (name, value) in item.iter() {
        if whole.get(name) != Some(value) {
            return Err(format!(
                "{k:?}: {name} returned as {value:?}, stored as {:?}",
                whole.get(name)
            ));
        }
    }
    for name in p.attributes {
        if whole.get(*name).is_some() && item.get(*name).is_none() {
            return Err(format!("{k:?}: projected {name} missing from {item:?}"));
        }
    }
    for name in p.absent {
        if item.get(*name).is_some() {
            return Err(format!(
                "{k:?}: {name}, not projected, returned in {item:?}"
            ));
        }
    }
    Ok(())
}

/// The query kinds, paged alike.
pub(crate) trait Paged {
    async fn page(&self, token: Option<&str>) -> entity_manager::Result<QueryPageResult>;
    async fn all_pages(&self, token: Option<&str>) -> entity_manager::Result<Vec<QueryPageResult>>;
    async fn streamed(&self) -> entity_manager::Result<Vec<Item>>;
    /// `pages(None)`, as it comes.
    fn lazy_pages(&self) -> impl futures::Stream<Item = entity_manager::Result<QueryPageResult>>;
    /// `stream()`, as it comes.
    fn lazy_items(&self) -> impl futures::Stream<Item = entity_manager::Result<Item>>;
}

impl<S: Store> Paged for MultiQuery<'_, S> {
    async fn page(&self, token: Option<&str>) -> entity_manager::Result<QueryPageResult> {
        MultiQuery::page(self, token).await
    }
    async fn all_pages(&self, token: Option<&str>) -> entity_manager::Result<Vec<QueryPageResult>> {
        self.pages(token).try_collect().await
    }
    async fn streamed(&self) -> entity_manager::Result<Vec<Item>> {
        self.stream().try_collect().await
    }
    fn lazy_pages(&self) -> impl futures::Stream<Item = entity_manager::Result<QueryPageResult>> {
        self.pages(None)
    }
    fn lazy_items(&self) -> impl futures::Stream<Item = entity_manager::Result<Item>> {
        self.stream()
    }
}

impl<S: Store> Paged for Query<'_, S, Indexed> {
    async fn page(&self, token: Option<&str>) -> entity_manager::Result<QueryPageResult> {
        Query::page(self, token).await
    }
    async fn all_pages(&self, token: Option<&str>) -> entity_manager::Result<Vec<QueryPageResult>> {
        self.pages(token).try_collect().await
    }
    async fn streamed(&self) -> entity_manager::Result<Vec<Item>> {
        self.stream().try_collect().await
    }
    fn lazy_pages(&self) -> impl futures::Stream<Item = entity_manager::Result<QueryPageResult>> {
        self.pages(None)
    }
    fn lazy_items(&self) -> impl futures::Stream<Item = entity_manager::Result<Item>> {
        self.stream()
    }
}

/// How returned records compare with the model's list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ties {
    /// Exactly (`MemoryStore`: equal keys in a partition by table keys).
    Exact,
    /// Exactly up to the order of records of equal key in one lane (`DynamoDB` keeps them in an
    /// order of its own).
    WithinLane,
}

/// `got` against the model's `want`: the same records, in the same order (up to ties).
pub(crate) fn compare(got: &[Key], want: &[Hit], ties: Ties) -> Result<(), String> {
    let show = |keys: &[Key]| {
        keys.iter()
            .map(|(h, r)| format!("{h}/{r}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let wanted: Vec<Key> = want
        .iter()
        .map(|h| (h.hash_key.clone(), h.range_key.clone()))
        .collect();
    let fail = |why: String| {
        Err(format!(
            "{why}\n  got:  [{}]\n  want: [{}]",
            show(got),
            show(&wanted)
        ))
    };
    match ties {
        Ties::Exact => {
            if got != wanted {
                return fail(first_difference(got, &wanted));
            }
        }
        Ties::WithinLane => {
            let at: HashMap<&Key, usize> = wanted.iter().enumerate().map(|(i, k)| (k, i)).collect();
            let mut seen = HashSet::new();
            for (i, k) in got.iter().enumerate() {
                let Some(&j) = at.get(k) else {
                    return fail(format!("{k:?} is not selected"));
                };
                if !seen.insert(k) {
                    return fail(format!("{k:?} twice"));
                }
                if !want.get(i).is_some_and(|w| w.same_place(&want[j])) {
                    return fail(format!("{k:?} at {i}, out of order"));
                }
            }
            if got.len() != wanted.len() {
                return fail(first_difference(got, &wanted));
            }
        }
    }
    Ok(())
}

fn first_difference(got: &[Key], want: &[Key]) -> String {
    let at = got
        .iter()
        .zip(want)
        .position(|(g, w)| g != w)
        .unwrap_or_else(|| got.len().min(want.len()));
    let missing: Vec<&Key> = want.iter().filter(|k| !got.contains(k)).collect();
    let extra: Vec<&Key> = got.iter().filter(|k| !want.contains(k)).collect();
    format!(
        "differs at {at} ({} returned, {} selected; missing {missing:?}; not selected or extra {extra:?})",
        got.len(),
        want.len()
    )
}

/// Pages `q` the way `way` says and checks the records against `want`, every page but the
/// last full (`min(limit, remaining)` items), and each returned item as `stored` holds it
/// (`None`: not compared, e.g. a projection).
pub(crate) async fn check<Q: Paged>(
    q: &Q,
    want: &[Hit],
    limit: usize,
    way: Way,
    ties: Ties,
    stored: &HashMap<Key, Item>,
    projection: Option<&Projected<'_>>,
) -> Result<(), String> {
    let e = |what: &str, e: entity_manager::Error| format!("{what}: {e}");
    if ONLY_THE_WAY.with(std::cell::Cell::get) && matches!(way, Way::Pages | Way::Stream) {
        return check_way(q, want, limit, way, ties, &[]).await;
    }
    // by tokens, always: the reference the other ways are compared with
    let mut pages: Vec<(Vec<Key>, Option<String>)> = Vec::new();
    let mut token: Option<String> = None;
    let mut returned = 0;
    loop {
        let page = q
            .page(token.as_deref())
            .await
            .map_err(|x| e(&format!("page {}", pages.len()), x))?;
        let keys: Vec<Key> = page.items.iter().map(key).collect();
        let expected = limit.min(want.len().saturating_sub(returned));
        if keys.len() != expected {
            let mut got: Vec<Key> = pages.iter().flat_map(|p| p.0.clone()).collect();
            got.extend(keys.iter().cloned());
            let detail = compare(&got, want, ties).err().unwrap_or_default();
            return Err(format!(
                "page {} holds {} items, not {expected} (limit {limit}, {returned} returned before, next {}): {detail}",
                pages.len(),
                keys.len(),
                if page.next.is_some() {
                    "a token"
                } else {
                    "none"
                },
            ));
        }
        for item in &page.items {
            check_item(item, stored, projection)?;
        }
        returned += keys.len();
        let next = page.next.clone();
        pages.push((keys, page.next));
        match next {
            Some(next) => token = Some(next),
            None => break,
        }
        if pages.len() > want.len() / limit + 2 {
            return Err(format!(
                "the paging did not end after {} pages",
                pages.len()
            ));
        }
    }
    let got: Vec<Key> = pages.iter().flat_map(|p| p.0.clone()).collect();
    compare(&got, want, ties).map_err(|x| format!("by tokens: {x}"))?;
    check_way(q, want, limit, way, ties, &pages).await
}

/// The way beside tokens, against the model and the pages by tokens.
async fn check_way<Q: Paged>(
    q: &Q,
    want: &[Hit],
    limit: usize,
    way: Way,
    ties: Ties,
    pages: &[(Vec<Key>, Option<String>)],
) -> Result<(), String> {
    let e = |what: &str, e: entity_manager::Error| format!("{what}: {e}");
    match way {
        Way::Tokens => {}
        Way::Resumed => {
            // `page` resumed from every token gives the page after it
            for (i, (_, next)) in pages.iter().enumerate() {
                let Some(next) = next else { continue };
                let again = q
                    .page(Some(next))
                    .await
                    .map_err(|x| e(&format!("resumed after page {i}"), x))?;
                let keys: Vec<Key> = again.items.iter().map(key).collect();
                if keys != pages[i + 1].0 || again.next.is_some() != pages[i + 1].1.is_some() {
                    return Err(format!(
                        "resumed from the token of page {i}: {keys:?} (next {}), not {:?} (next {})",
                        again.next.is_some(),
                        pages[i + 1].0,
                        pages[i + 1].1.is_some()
                    ));
                }
            }
        }
        Way::Pages => {
            let all = q.all_pages(None).await.map_err(|x| e("pages", x))?;
            let by_pages: Vec<Vec<Key>> = all
                .iter()
                .map(|p| p.items.iter().map(key).collect())
                .collect();
            let got: Vec<Key> = by_pages.iter().flatten().cloned().collect();
            compare(&got, want, ties).map_err(|x| format!("pages: {x}"))?;
            for (i, p) in by_pages.iter().enumerate() {
                let expected =
                    limit.min(want.len() - by_pages[..i].iter().map(Vec::len).sum::<usize>());
                if p.len() != expected {
                    return Err(format!("pages: page {i} holds {}, not {expected}", p.len()));
                }
            }
        }
        Way::PagesFrom(r) => {
            let tokens: Vec<(usize, &String)> = pages
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.1.as_ref().map(|t| (i, t)))
                .collect();
            if let Some(&(i, token)) = tokens.get(r % tokens.len().max(1)) {
                let all = q
                    .all_pages(Some(token))
                    .await
                    .map_err(|x| e(&format!("pages after page {i}"), x))?;
                // the pages by tokens up to the token, then the resumed ones
                let mut got: Vec<Key> = pages[..=i].iter().flat_map(|p| p.0.clone()).collect();
                got.extend(all.iter().flat_map(|p| p.items.iter().map(key)));
                compare(&got, want, ties).map_err(|x| format!("pages after page {i}: {x}"))?;
            }
        }
        Way::Stream => {
            let items = q.streamed().await.map_err(|x| e("stream", x))?;
            let got: Vec<Key> = items.iter().map(key).collect();
            compare(&got, want, ties).map_err(|x| format!("stream: {x}"))?;
        }
    }
    Ok(())
}

/// A union-mode query (indexes with different range keys) paged by tokens and as a stream,
/// against the paging guide's union-mode contract: each page at most `limit` items, none
/// twice, sorted by the unique value (`sort_by`'s default); every selected record at least
/// once over the paging, and at most once per index that selects it (`selected`: the number
/// of indexes selecting each record); nothing else.
pub(crate) async fn check_union<Q: Paged>(
    q: &Q,
    selected: &HashMap<Key, usize>,
    unique: &str,
    limit: usize,
    stream: bool,
) -> Result<(), String> {
    let id = |item: &Item| match item.get(unique) {
        Some(entity_manager::AttributeValue::S(s)) => s.clone(),
        _ => String::new(),
    };
    let mut counts: HashMap<Key, usize> = HashMap::new();
    let mut token: Option<String> = None;
    let most: usize = selected.values().sum::<usize>() / limit + 3;
    for n in 0.. {
        if n > most {
            return Err(format!("the union paging did not end after {n} pages"));
        }
        let page = q
            .page(token.as_deref())
            .await
            .map_err(|e| format!("union page {n}: {e}"))?;
        if page.items.len() > limit {
            return Err(format!(
                "union page {n} holds {} > {limit}",
                page.items.len()
            ));
        }
        let ids: Vec<String> = page.items.iter().map(id).collect();
        if ids.windows(2).any(|w| w[0].as_bytes() >= w[1].as_bytes()) {
            return Err(format!(
                "union page {n} is not sorted by {unique} or repeats: {ids:?}"
            ));
        }
        for item in &page.items {
            *counts.entry(key(item)).or_default() += 1;
        }
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    for (k, &c) in &counts {
        let most = selected.get(k).copied().unwrap_or(0);
        if c > most {
            return Err(format!(
                "{k:?} returned {c} times, selected by {most} indexes"
            ));
        }
    }
    let missing: Vec<&Key> = selected
        .keys()
        .filter(|k| !counts.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(format!("union: never returned {missing:?}"));
    }
    if stream {
        let items = q
            .streamed()
            .await
            .map_err(|e| format!("union stream: {e}"))?;
        let got: HashSet<Key> = items.iter().map(key).collect();
        let want: HashSet<Key> = selected.keys().cloned().collect();
        if got != want {
            return Err(format!("union stream: {got:?} ≠ {want:?}"));
        }
    }
    Ok(())
}
