//! Wide records: a typed update or `modify` that changes 300 attributes renders an
//! `UpdateItem` far over `DynamoDB`'s 4 KB expression limit (which both stores enforce alike).
//! It never fails late: with a version field, the whole record is put instead, conditioned on
//! the version read, so the read-modify-write stays safe (concurrent wide writers lose
//! nothing); without one, the read-modify-write could only be guarded attribute by attribute,
//! which is over the limits too, so the write is refused before anything is written, with a
//! typed error that says to add a version field.
//!
//! The entities are written out field by field (300 of them) on purpose: the derive sees what
//! a user's wide struct would give it. Their futures are large, hence boxed.
#![allow(clippy::struct_field_names, clippy::too_many_lines)]

use entity_manager::field::Changes;
use entity_manager::store::{
    ExpressionKind, ExpressionLimit, MemoryStore, ReturnValues, Store, TableDefinition, Update,
};
use entity_manager::{Entity, EntityExt, Error, Table};
use serde::{Deserialize, Serialize};

mod entity_support;
mod store_support;

use entity_support::{TestResult, assert_stored, key_of};

#[derive(Table)]
#[table(entities(Wide, Bare))]
struct Wides;

/// 300 string fields and a version field.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Wides, unique = wide_id, timestamp = created, version = version)]
#[shard_bumps(bumps = [bump(timestamp = 1_000, char_bits = 2, chars = 1)])]
struct Wide {
    #[transcode("string")]
    wide_id: String,
    #[transcode("timestamp")]
    created: u64,
    version: u64,
    f000: String,
    f001: String,
    f002: String,
    f003: String,
    f004: String,
    f005: String,
    f006: String,
    f007: String,
    f008: String,
    f009: String,
    f010: String,
    f011: String,
    f012: String,
    f013: String,
    f014: String,
    f015: String,
    f016: String,
    f017: String,
    f018: String,
    f019: String,
    f020: String,
    f021: String,
    f022: String,
    f023: String,
    f024: String,
    f025: String,
    f026: String,
    f027: String,
    f028: String,
    f029: String,
    f030: String,
    f031: String,
    f032: String,
    f033: String,
    f034: String,
    f035: String,
    f036: String,
    f037: String,
    f038: String,
    f039: String,
    f040: String,
    f041: String,
    f042: String,
    f043: String,
    f044: String,
    f045: String,
    f046: String,
    f047: String,
    f048: String,
    f049: String,
    f050: String,
    f051: String,
    f052: String,
    f053: String,
    f054: String,
    f055: String,
    f056: String,
    f057: String,
    f058: String,
    f059: String,
    f060: String,
    f061: String,
    f062: String,
    f063: String,
    f064: String,
    f065: String,
    f066: String,
    f067: String,
    f068: String,
    f069: String,
    f070: String,
    f071: String,
    f072: String,
    f073: String,
    f074: String,
    f075: String,
    f076: String,
    f077: String,
    f078: String,
    f079: String,
    f080: String,
    f081: String,
    f082: String,
    f083: String,
    f084: String,
    f085: String,
    f086: String,
    f087: String,
    f088: String,
    f089: String,
    f090: String,
    f091: String,
    f092: String,
    f093: String,
    f094: String,
    f095: String,
    f096: String,
    f097: String,
    f098: String,
    f099: String,
    f100: String,
    f101: String,
    f102: String,
    f103: String,
    f104: String,
    f105: String,
    f106: String,
    f107: String,
    f108: String,
    f109: String,
    f110: String,
    f111: String,
    f112: String,
    f113: String,
    f114: String,
    f115: String,
    f116: String,
    f117: String,
    f118: String,
    f119: String,
    f120: String,
    f121: String,
    f122: String,
    f123: String,
    f124: String,
    f125: String,
    f126: String,
    f127: String,
    f128: String,
    f129: String,
    f130: String,
    f131: String,
    f132: String,
    f133: String,
    f134: String,
    f135: String,
    f136: String,
    f137: String,
    f138: String,
    f139: String,
    f140: String,
    f141: String,
    f142: String,
    f143: String,
    f144: String,
    f145: String,
    f146: String,
    f147: String,
    f148: String,
    f149: String,
    f150: String,
    f151: String,
    f152: String,
    f153: String,
    f154: String,
    f155: String,
    f156: String,
    f157: String,
    f158: String,
    f159: String,
    f160: String,
    f161: String,
    f162: String,
    f163: String,
    f164: String,
    f165: String,
    f166: String,
    f167: String,
    f168: String,
    f169: String,
    f170: String,
    f171: String,
    f172: String,
    f173: String,
    f174: String,
    f175: String,
    f176: String,
    f177: String,
    f178: String,
    f179: String,
    f180: String,
    f181: String,
    f182: String,
    f183: String,
    f184: String,
    f185: String,
    f186: String,
    f187: String,
    f188: String,
    f189: String,
    f190: String,
    f191: String,
    f192: String,
    f193: String,
    f194: String,
    f195: String,
    f196: String,
    f197: String,
    f198: String,
    f199: String,
    f200: String,
    f201: String,
    f202: String,
    f203: String,
    f204: String,
    f205: String,
    f206: String,
    f207: String,
    f208: String,
    f209: String,
    f210: String,
    f211: String,
    f212: String,
    f213: String,
    f214: String,
    f215: String,
    f216: String,
    f217: String,
    f218: String,
    f219: String,
    f220: String,
    f221: String,
    f222: String,
    f223: String,
    f224: String,
    f225: String,
    f226: String,
    f227: String,
    f228: String,
    f229: String,
    f230: String,
    f231: String,
    f232: String,
    f233: String,
    f234: String,
    f235: String,
    f236: String,
    f237: String,
    f238: String,
    f239: String,
    f240: String,
    f241: String,
    f242: String,
    f243: String,
    f244: String,
    f245: String,
    f246: String,
    f247: String,
    f248: String,
    f249: String,
    f250: String,
    f251: String,
    f252: String,
    f253: String,
    f254: String,
    f255: String,
    f256: String,
    f257: String,
    f258: String,
    f259: String,
    f260: String,
    f261: String,
    f262: String,
    f263: String,
    f264: String,
    f265: String,
    f266: String,
    f267: String,
    f268: String,
    f269: String,
    f270: String,
    f271: String,
    f272: String,
    f273: String,
    f274: String,
    f275: String,
    f276: String,
    f277: String,
    f278: String,
    f279: String,
    f280: String,
    f281: String,
    f282: String,
    f283: String,
    f284: String,
    f285: String,
    f286: String,
    f287: String,
    f288: String,
    f289: String,
    f290: String,
    f291: String,
    f292: String,
    f293: String,
    f294: String,
    f295: String,
    f296: String,
    f297: String,
    f298: String,
    f299: String,
}

/// The same 300 fields, without a version field.
#[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[entity(table = Wides, unique = bare_id, timestamp = created)]
struct Bare {
    #[transcode("string")]
    bare_id: String,
    #[transcode("timestamp")]
    created: u64,
    f000: String,
    f001: String,
    f002: String,
    f003: String,
    f004: String,
    f005: String,
    f006: String,
    f007: String,
    f008: String,
    f009: String,
    f010: String,
    f011: String,
    f012: String,
    f013: String,
    f014: String,
    f015: String,
    f016: String,
    f017: String,
    f018: String,
    f019: String,
    f020: String,
    f021: String,
    f022: String,
    f023: String,
    f024: String,
    f025: String,
    f026: String,
    f027: String,
    f028: String,
    f029: String,
    f030: String,
    f031: String,
    f032: String,
    f033: String,
    f034: String,
    f035: String,
    f036: String,
    f037: String,
    f038: String,
    f039: String,
    f040: String,
    f041: String,
    f042: String,
    f043: String,
    f044: String,
    f045: String,
    f046: String,
    f047: String,
    f048: String,
    f049: String,
    f050: String,
    f051: String,
    f052: String,
    f053: String,
    f054: String,
    f055: String,
    f056: String,
    f057: String,
    f058: String,
    f059: String,
    f060: String,
    f061: String,
    f062: String,
    f063: String,
    f064: String,
    f065: String,
    f066: String,
    f067: String,
    f068: String,
    f069: String,
    f070: String,
    f071: String,
    f072: String,
    f073: String,
    f074: String,
    f075: String,
    f076: String,
    f077: String,
    f078: String,
    f079: String,
    f080: String,
    f081: String,
    f082: String,
    f083: String,
    f084: String,
    f085: String,
    f086: String,
    f087: String,
    f088: String,
    f089: String,
    f090: String,
    f091: String,
    f092: String,
    f093: String,
    f094: String,
    f095: String,
    f096: String,
    f097: String,
    f098: String,
    f099: String,
    f100: String,
    f101: String,
    f102: String,
    f103: String,
    f104: String,
    f105: String,
    f106: String,
    f107: String,
    f108: String,
    f109: String,
    f110: String,
    f111: String,
    f112: String,
    f113: String,
    f114: String,
    f115: String,
    f116: String,
    f117: String,
    f118: String,
    f119: String,
    f120: String,
    f121: String,
    f122: String,
    f123: String,
    f124: String,
    f125: String,
    f126: String,
    f127: String,
    f128: String,
    f129: String,
    f130: String,
    f131: String,
    f132: String,
    f133: String,
    f134: String,
    f135: String,
    f136: String,
    f137: String,
    f138: String,
    f139: String,
    f140: String,
    f141: String,
    f142: String,
    f143: String,
    f144: String,
    f145: String,
    f146: String,
    f147: String,
    f148: String,
    f149: String,
    f150: String,
    f151: String,
    f152: String,
    f153: String,
    f154: String,
    f155: String,
    f156: String,
    f157: String,
    f158: String,
    f159: String,
    f160: String,
    f161: String,
    f162: String,
    f163: String,
    f164: String,
    f165: String,
    f166: String,
    f167: String,
    f168: String,
    f169: String,
    f170: String,
    f171: String,
    f172: String,
    f173: String,
    f174: String,
    f175: String,
    f176: String,
    f177: String,
    f178: String,
    f179: String,
    f180: String,
    f181: String,
    f182: String,
    f183: String,
    f184: String,
    f185: String,
    f186: String,
    f187: String,
    f188: String,
    f189: String,
    f190: String,
    f191: String,
    f192: String,
    f193: String,
    f194: String,
    f195: String,
    f196: String,
    f197: String,
    f198: String,
    f199: String,
    f200: String,
    f201: String,
    f202: String,
    f203: String,
    f204: String,
    f205: String,
    f206: String,
    f207: String,
    f208: String,
    f209: String,
    f210: String,
    f211: String,
    f212: String,
    f213: String,
    f214: String,
    f215: String,
    f216: String,
    f217: String,
    f218: String,
    f219: String,
    f220: String,
    f221: String,
    f222: String,
    f223: String,
    f224: String,
    f225: String,
    f226: String,
    f227: String,
    f228: String,
    f229: String,
    f230: String,
    f231: String,
    f232: String,
    f233: String,
    f234: String,
    f235: String,
    f236: String,
    f237: String,
    f238: String,
    f239: String,
    f240: String,
    f241: String,
    f242: String,
    f243: String,
    f244: String,
    f245: String,
    f246: String,
    f247: String,
    f248: String,
    f249: String,
    f250: String,
    f251: String,
    f252: String,
    f253: String,
    f254: String,
    f255: String,
    f256: String,
    f257: String,
    f258: String,
    f259: String,
    f260: String,
    f261: String,
    f262: String,
    f263: String,
    f264: String,
    f265: String,
    f266: String,
    f267: String,
    f268: String,
    f269: String,
    f270: String,
    f271: String,
    f272: String,
    f273: String,
    f274: String,
    f275: String,
    f276: String,
    f277: String,
    f278: String,
    f279: String,
    f280: String,
    f281: String,
    f282: String,
    f283: String,
    f284: String,
    f285: String,
    f286: String,
    f287: String,
    f288: String,
    f289: String,
    f290: String,
    f291: String,
    f292: String,
    f293: String,
    f294: String,
    f295: String,
    f296: String,
    f297: String,
    f298: String,
    f299: String,
}

fn wide(id: &str, created: u64) -> Wide {
    Wide {
        wide_id: id.to_owned(),
        created,
        version: 0,
        f000: String::new(),
        f001: String::new(),
        f002: String::new(),
        f003: String::new(),
        f004: String::new(),
        f005: String::new(),
        f006: String::new(),
        f007: String::new(),
        f008: String::new(),
        f009: String::new(),
        f010: String::new(),
        f011: String::new(),
        f012: String::new(),
        f013: String::new(),
        f014: String::new(),
        f015: String::new(),
        f016: String::new(),
        f017: String::new(),
        f018: String::new(),
        f019: String::new(),
        f020: String::new(),
        f021: String::new(),
        f022: String::new(),
        f023: String::new(),
        f024: String::new(),
        f025: String::new(),
        f026: String::new(),
        f027: String::new(),
        f028: String::new(),
        f029: String::new(),
        f030: String::new(),
        f031: String::new(),
        f032: String::new(),
        f033: String::new(),
        f034: String::new(),
        f035: String::new(),
        f036: String::new(),
        f037: String::new(),
        f038: String::new(),
        f039: String::new(),
        f040: String::new(),
        f041: String::new(),
        f042: String::new(),
        f043: String::new(),
        f044: String::new(),
        f045: String::new(),
        f046: String::new(),
        f047: String::new(),
        f048: String::new(),
        f049: String::new(),
        f050: String::new(),
        f051: String::new(),
        f052: String::new(),
        f053: String::new(),
        f054: String::new(),
        f055: String::new(),
        f056: String::new(),
        f057: String::new(),
        f058: String::new(),
        f059: String::new(),
        f060: String::new(),
        f061: String::new(),
        f062: String::new(),
        f063: String::new(),
        f064: String::new(),
        f065: String::new(),
        f066: String::new(),
        f067: String::new(),
        f068: String::new(),
        f069: String::new(),
        f070: String::new(),
        f071: String::new(),
        f072: String::new(),
        f073: String::new(),
        f074: String::new(),
        f075: String::new(),
        f076: String::new(),
        f077: String::new(),
        f078: String::new(),
        f079: String::new(),
        f080: String::new(),
        f081: String::new(),
        f082: String::new(),
        f083: String::new(),
        f084: String::new(),
        f085: String::new(),
        f086: String::new(),
        f087: String::new(),
        f088: String::new(),
        f089: String::new(),
        f090: String::new(),
        f091: String::new(),
        f092: String::new(),
        f093: String::new(),
        f094: String::new(),
        f095: String::new(),
        f096: String::new(),
        f097: String::new(),
        f098: String::new(),
        f099: String::new(),
        f100: String::new(),
        f101: String::new(),
        f102: String::new(),
        f103: String::new(),
        f104: String::new(),
        f105: String::new(),
        f106: String::new(),
        f107: String::new(),
        f108: String::new(),
        f109: String::new(),
        f110: String::new(),
        f111: String::new(),
        f112: String::new(),
        f113: String::new(),
        f114: String::new(),
        f115: String::new(),
        f116: String::new(),
        f117: String::new(),
        f118: String::new(),
        f119: String::new(),
        f120: String::new(),
        f121: String::new(),
        f122: String::new(),
        f123: String::new(),
        f124: String::new(),
        f125: String::new(),
        f126: String::new(),
        f127: String::new(),
        f128: String::new(),
        f129: String::new(),
        f130: String::new(),
        f131: String::new(),
        f132: String::new(),
        f133: String::new(),
        f134: String::new(),
        f135: String::new(),
        f136: String::new(),
        f137: String::new(),
        f138: String::new(),
        f139: String::new(),
        f140: String::new(),
        f141: String::new(),
        f142: String::new(),
        f143: String::new(),
        f144: String::new(),
        f145: String::new(),
        f146: String::new(),
        f147: String::new(),
        f148: String::new(),
        f149: String::new(),
        f150: String::new(),
        f151: String::new(),
        f152: String::new(),
        f153: String::new(),
        f154: String::new(),
        f155: String::new(),
        f156: String::new(),
        f157: String::new(),
        f158: String::new(),
        f159: String::new(),
        f160: String::new(),
        f161: String::new(),
        f162: String::new(),
        f163: String::new(),
        f164: String::new(),
        f165: String::new(),
        f166: String::new(),
        f167: String::new(),
        f168: String::new(),
        f169: String::new(),
        f170: String::new(),
        f171: String::new(),
        f172: String::new(),
        f173: String::new(),
        f174: String::new(),
        f175: String::new(),
        f176: String::new(),
        f177: String::new(),
        f178: String::new(),
        f179: String::new(),
        f180: String::new(),
        f181: String::new(),
        f182: String::new(),
        f183: String::new(),
        f184: String::new(),
        f185: String::new(),
        f186: String::new(),
        f187: String::new(),
        f188: String::new(),
        f189: String::new(),
        f190: String::new(),
        f191: String::new(),
        f192: String::new(),
        f193: String::new(),
        f194: String::new(),
        f195: String::new(),
        f196: String::new(),
        f197: String::new(),
        f198: String::new(),
        f199: String::new(),
        f200: String::new(),
        f201: String::new(),
        f202: String::new(),
        f203: String::new(),
        f204: String::new(),
        f205: String::new(),
        f206: String::new(),
        f207: String::new(),
        f208: String::new(),
        f209: String::new(),
        f210: String::new(),
        f211: String::new(),
        f212: String::new(),
        f213: String::new(),
        f214: String::new(),
        f215: String::new(),
        f216: String::new(),
        f217: String::new(),
        f218: String::new(),
        f219: String::new(),
        f220: String::new(),
        f221: String::new(),
        f222: String::new(),
        f223: String::new(),
        f224: String::new(),
        f225: String::new(),
        f226: String::new(),
        f227: String::new(),
        f228: String::new(),
        f229: String::new(),
        f230: String::new(),
        f231: String::new(),
        f232: String::new(),
        f233: String::new(),
        f234: String::new(),
        f235: String::new(),
        f236: String::new(),
        f237: String::new(),
        f238: String::new(),
        f239: String::new(),
        f240: String::new(),
        f241: String::new(),
        f242: String::new(),
        f243: String::new(),
        f244: String::new(),
        f245: String::new(),
        f246: String::new(),
        f247: String::new(),
        f248: String::new(),
        f249: String::new(),
        f250: String::new(),
        f251: String::new(),
        f252: String::new(),
        f253: String::new(),
        f254: String::new(),
        f255: String::new(),
        f256: String::new(),
        f257: String::new(),
        f258: String::new(),
        f259: String::new(),
        f260: String::new(),
        f261: String::new(),
        f262: String::new(),
        f263: String::new(),
        f264: String::new(),
        f265: String::new(),
        f266: String::new(),
        f267: String::new(),
        f268: String::new(),
        f269: String::new(),
        f270: String::new(),
        f271: String::new(),
        f272: String::new(),
        f273: String::new(),
        f274: String::new(),
        f275: String::new(),
        f276: String::new(),
        f277: String::new(),
        f278: String::new(),
        f279: String::new(),
        f280: String::new(),
        f281: String::new(),
        f282: String::new(),
        f283: String::new(),
        f284: String::new(),
        f285: String::new(),
        f286: String::new(),
        f287: String::new(),
        f288: String::new(),
        f289: String::new(),
        f290: String::new(),
        f291: String::new(),
        f292: String::new(),
        f293: String::new(),
        f294: String::new(),
        f295: String::new(),
        f296: String::new(),
        f297: String::new(),
        f298: String::new(),
        f299: String::new(),
    }
}

fn bare(id: &str) -> Bare {
    Bare {
        bare_id: id.to_owned(),
        created: 1,
        f000: String::new(),
        f001: String::new(),
        f002: String::new(),
        f003: String::new(),
        f004: String::new(),
        f005: String::new(),
        f006: String::new(),
        f007: String::new(),
        f008: String::new(),
        f009: String::new(),
        f010: String::new(),
        f011: String::new(),
        f012: String::new(),
        f013: String::new(),
        f014: String::new(),
        f015: String::new(),
        f016: String::new(),
        f017: String::new(),
        f018: String::new(),
        f019: String::new(),
        f020: String::new(),
        f021: String::new(),
        f022: String::new(),
        f023: String::new(),
        f024: String::new(),
        f025: String::new(),
        f026: String::new(),
        f027: String::new(),
        f028: String::new(),
        f029: String::new(),
        f030: String::new(),
        f031: String::new(),
        f032: String::new(),
        f033: String::new(),
        f034: String::new(),
        f035: String::new(),
        f036: String::new(),
        f037: String::new(),
        f038: String::new(),
        f039: String::new(),
        f040: String::new(),
        f041: String::new(),
        f042: String::new(),
        f043: String::new(),
        f044: String::new(),
        f045: String::new(),
        f046: String::new(),
        f047: String::new(),
        f048: String::new(),
        f049: String::new(),
        f050: String::new(),
        f051: String::new(),
        f052: String::new(),
        f053: String::new(),
        f054: String::new(),
        f055: String::new(),
        f056: String::new(),
        f057: String::new(),
        f058: String::new(),
        f059: String::new(),
        f060: String::new(),
        f061: String::new(),
        f062: String::new(),
        f063: String::new(),
        f064: String::new(),
        f065: String::new(),
        f066: String::new(),
        f067: String::new(),
        f068: String::new(),
        f069: String::new(),
        f070: String::new(),
        f071: String::new(),
        f072: String::new(),
        f073: String::new(),
        f074: String::new(),
        f075: String::new(),
        f076: String::new(),
        f077: String::new(),
        f078: String::new(),
        f079: String::new(),
        f080: String::new(),
        f081: String::new(),
        f082: String::new(),
        f083: String::new(),
        f084: String::new(),
        f085: String::new(),
        f086: String::new(),
        f087: String::new(),
        f088: String::new(),
        f089: String::new(),
        f090: String::new(),
        f091: String::new(),
        f092: String::new(),
        f093: String::new(),
        f094: String::new(),
        f095: String::new(),
        f096: String::new(),
        f097: String::new(),
        f098: String::new(),
        f099: String::new(),
        f100: String::new(),
        f101: String::new(),
        f102: String::new(),
        f103: String::new(),
        f104: String::new(),
        f105: String::new(),
        f106: String::new(),
        f107: String::new(),
        f108: String::new(),
        f109: String::new(),
        f110: String::new(),
        f111: String::new(),
        f112: String::new(),
        f113: String::new(),
        f114: String::new(),
        f115: String::new(),
        f116: String::new(),
        f117: String::new(),
        f118: String::new(),
        f119: String::new(),
        f120: String::new(),
        f121: String::new(),
        f122: String::new(),
        f123: String::new(),
        f124: String::new(),
        f125: String::new(),
        f126: String::new(),
        f127: String::new(),
        f128: String::new(),
        f129: String::new(),
        f130: String::new(),
        f131: String::new(),
        f132: String::new(),
        f133: String::new(),
        f134: String::new(),
        f135: String::new(),
        f136: String::new(),
        f137: String::new(),
        f138: String::new(),
        f139: String::new(),
        f140: String::new(),
        f141: String::new(),
        f142: String::new(),
        f143: String::new(),
        f144: String::new(),
        f145: String::new(),
        f146: String::new(),
        f147: String::new(),
        f148: String::new(),
        f149: String::new(),
        f150: String::new(),
        f151: String::new(),
        f152: String::new(),
        f153: String::new(),
        f154: String::new(),
        f155: String::new(),
        f156: String::new(),
        f157: String::new(),
        f158: String::new(),
        f159: String::new(),
        f160: String::new(),
        f161: String::new(),
        f162: String::new(),
        f163: String::new(),
        f164: String::new(),
        f165: String::new(),
        f166: String::new(),
        f167: String::new(),
        f168: String::new(),
        f169: String::new(),
        f170: String::new(),
        f171: String::new(),
        f172: String::new(),
        f173: String::new(),
        f174: String::new(),
        f175: String::new(),
        f176: String::new(),
        f177: String::new(),
        f178: String::new(),
        f179: String::new(),
        f180: String::new(),
        f181: String::new(),
        f182: String::new(),
        f183: String::new(),
        f184: String::new(),
        f185: String::new(),
        f186: String::new(),
        f187: String::new(),
        f188: String::new(),
        f189: String::new(),
        f190: String::new(),
        f191: String::new(),
        f192: String::new(),
        f193: String::new(),
        f194: String::new(),
        f195: String::new(),
        f196: String::new(),
        f197: String::new(),
        f198: String::new(),
        f199: String::new(),
        f200: String::new(),
        f201: String::new(),
        f202: String::new(),
        f203: String::new(),
        f204: String::new(),
        f205: String::new(),
        f206: String::new(),
        f207: String::new(),
        f208: String::new(),
        f209: String::new(),
        f210: String::new(),
        f211: String::new(),
        f212: String::new(),
        f213: String::new(),
        f214: String::new(),
        f215: String::new(),
        f216: String::new(),
        f217: String::new(),
        f218: String::new(),
        f219: String::new(),
        f220: String::new(),
        f221: String::new(),
        f222: String::new(),
        f223: String::new(),
        f224: String::new(),
        f225: String::new(),
        f226: String::new(),
        f227: String::new(),
        f228: String::new(),
        f229: String::new(),
        f230: String::new(),
        f231: String::new(),
        f232: String::new(),
        f233: String::new(),
        f234: String::new(),
        f235: String::new(),
        f236: String::new(),
        f237: String::new(),
        f238: String::new(),
        f239: String::new(),
        f240: String::new(),
        f241: String::new(),
        f242: String::new(),
        f243: String::new(),
        f244: String::new(),
        f245: String::new(),
        f246: String::new(),
        f247: String::new(),
        f248: String::new(),
        f249: String::new(),
        f250: String::new(),
        f251: String::new(),
        f252: String::new(),
        f253: String::new(),
        f254: String::new(),
        f255: String::new(),
        f256: String::new(),
        f257: String::new(),
        f258: String::new(),
        f259: String::new(),
        f260: String::new(),
        f261: String::new(),
        f262: String::new(),
        f263: String::new(),
        f264: String::new(),
        f265: String::new(),
        f266: String::new(),
        f267: String::new(),
        f268: String::new(),
        f269: String::new(),
        f270: String::new(),
        f271: String::new(),
        f272: String::new(),
        f273: String::new(),
        f274: String::new(),
        f275: String::new(),
        f276: String::new(),
        f277: String::new(),
        f278: String::new(),
        f279: String::new(),
        f280: String::new(),
        f281: String::new(),
        f282: String::new(),
        f283: String::new(),
        f284: String::new(),
        f285: String::new(),
        f286: String::new(),
        f287: String::new(),
        f288: String::new(),
        f289: String::new(),
        f290: String::new(),
        f291: String::new(),
        f292: String::new(),
        f293: String::new(),
        f294: String::new(),
        f295: String::new(),
        f296: String::new(),
        f297: String::new(),
        f298: String::new(),
        f299: String::new(),
    }
}

/// Changes every field: `tag` in front of its text (so that the stamps of concurrent writers
/// pile up).
fn stamp_wide(w: &mut Wide, tag: &str) {
    w.f000 = format!("{tag}{}", w.f000);
    w.f001 = format!("{tag}{}", w.f001);
    w.f002 = format!("{tag}{}", w.f002);
    w.f003 = format!("{tag}{}", w.f003);
    w.f004 = format!("{tag}{}", w.f004);
    w.f005 = format!("{tag}{}", w.f005);
    w.f006 = format!("{tag}{}", w.f006);
    w.f007 = format!("{tag}{}", w.f007);
    w.f008 = format!("{tag}{}", w.f008);
    w.f009 = format!("{tag}{}", w.f009);
    w.f010 = format!("{tag}{}", w.f010);
    w.f011 = format!("{tag}{}", w.f011);
    w.f012 = format!("{tag}{}", w.f012);
    w.f013 = format!("{tag}{}", w.f013);
    w.f014 = format!("{tag}{}", w.f014);
    w.f015 = format!("{tag}{}", w.f015);
    w.f016 = format!("{tag}{}", w.f016);
    w.f017 = format!("{tag}{}", w.f017);
    w.f018 = format!("{tag}{}", w.f018);
    w.f019 = format!("{tag}{}", w.f019);
    w.f020 = format!("{tag}{}", w.f020);
    w.f021 = format!("{tag}{}", w.f021);
    w.f022 = format!("{tag}{}", w.f022);
    w.f023 = format!("{tag}{}", w.f023);
    w.f024 = format!("{tag}{}", w.f024);
    w.f025 = format!("{tag}{}", w.f025);
    w.f026 = format!("{tag}{}", w.f026);
    w.f027 = format!("{tag}{}", w.f027);
    w.f028 = format!("{tag}{}", w.f028);
    w.f029 = format!("{tag}{}", w.f029);
    w.f030 = format!("{tag}{}", w.f030);
    w.f031 = format!("{tag}{}", w.f031);
    w.f032 = format!("{tag}{}", w.f032);
    w.f033 = format!("{tag}{}", w.f033);
    w.f034 = format!("{tag}{}", w.f034);
    w.f035 = format!("{tag}{}", w.f035);
    w.f036 = format!("{tag}{}", w.f036);
    w.f037 = format!("{tag}{}", w.f037);
    w.f038 = format!("{tag}{}", w.f038);
    w.f039 = format!("{tag}{}", w.f039);
    w.f040 = format!("{tag}{}", w.f040);
    w.f041 = format!("{tag}{}", w.f041);
    w.f042 = format!("{tag}{}", w.f042);
    w.f043 = format!("{tag}{}", w.f043);
    w.f044 = format!("{tag}{}", w.f044);
    w.f045 = format!("{tag}{}", w.f045);
    w.f046 = format!("{tag}{}", w.f046);
    w.f047 = format!("{tag}{}", w.f047);
    w.f048 = format!("{tag}{}", w.f048);
    w.f049 = format!("{tag}{}", w.f049);
    w.f050 = format!("{tag}{}", w.f050);
    w.f051 = format!("{tag}{}", w.f051);
    w.f052 = format!("{tag}{}", w.f052);
    w.f053 = format!("{tag}{}", w.f053);
    w.f054 = format!("{tag}{}", w.f054);
    w.f055 = format!("{tag}{}", w.f055);
    w.f056 = format!("{tag}{}", w.f056);
    w.f057 = format!("{tag}{}", w.f057);
    w.f058 = format!("{tag}{}", w.f058);
    w.f059 = format!("{tag}{}", w.f059);
    w.f060 = format!("{tag}{}", w.f060);
    w.f061 = format!("{tag}{}", w.f061);
    w.f062 = format!("{tag}{}", w.f062);
    w.f063 = format!("{tag}{}", w.f063);
    w.f064 = format!("{tag}{}", w.f064);
    w.f065 = format!("{tag}{}", w.f065);
    w.f066 = format!("{tag}{}", w.f066);
    w.f067 = format!("{tag}{}", w.f067);
    w.f068 = format!("{tag}{}", w.f068);
    w.f069 = format!("{tag}{}", w.f069);
    w.f070 = format!("{tag}{}", w.f070);
    w.f071 = format!("{tag}{}", w.f071);
    w.f072 = format!("{tag}{}", w.f072);
    w.f073 = format!("{tag}{}", w.f073);
    w.f074 = format!("{tag}{}", w.f074);
    w.f075 = format!("{tag}{}", w.f075);
    w.f076 = format!("{tag}{}", w.f076);
    w.f077 = format!("{tag}{}", w.f077);
    w.f078 = format!("{tag}{}", w.f078);
    w.f079 = format!("{tag}{}", w.f079);
    w.f080 = format!("{tag}{}", w.f080);
    w.f081 = format!("{tag}{}", w.f081);
    w.f082 = format!("{tag}{}", w.f082);
    w.f083 = format!("{tag}{}", w.f083);
    w.f084 = format!("{tag}{}", w.f084);
    w.f085 = format!("{tag}{}", w.f085);
    w.f086 = format!("{tag}{}", w.f086);
    w.f087 = format!("{tag}{}", w.f087);
    w.f088 = format!("{tag}{}", w.f088);
    w.f089 = format!("{tag}{}", w.f089);
    w.f090 = format!("{tag}{}", w.f090);
    w.f091 = format!("{tag}{}", w.f091);
    w.f092 = format!("{tag}{}", w.f092);
    w.f093 = format!("{tag}{}", w.f093);
    w.f094 = format!("{tag}{}", w.f094);
    w.f095 = format!("{tag}{}", w.f095);
    w.f096 = format!("{tag}{}", w.f096);
    w.f097 = format!("{tag}{}", w.f097);
    w.f098 = format!("{tag}{}", w.f098);
    w.f099 = format!("{tag}{}", w.f099);
    w.f100 = format!("{tag}{}", w.f100);
    w.f101 = format!("{tag}{}", w.f101);
    w.f102 = format!("{tag}{}", w.f102);
    w.f103 = format!("{tag}{}", w.f103);
    w.f104 = format!("{tag}{}", w.f104);
    w.f105 = format!("{tag}{}", w.f105);
    w.f106 = format!("{tag}{}", w.f106);
    w.f107 = format!("{tag}{}", w.f107);
    w.f108 = format!("{tag}{}", w.f108);
    w.f109 = format!("{tag}{}", w.f109);
    w.f110 = format!("{tag}{}", w.f110);
    w.f111 = format!("{tag}{}", w.f111);
    w.f112 = format!("{tag}{}", w.f112);
    w.f113 = format!("{tag}{}", w.f113);
    w.f114 = format!("{tag}{}", w.f114);
    w.f115 = format!("{tag}{}", w.f115);
    w.f116 = format!("{tag}{}", w.f116);
    w.f117 = format!("{tag}{}", w.f117);
    w.f118 = format!("{tag}{}", w.f118);
    w.f119 = format!("{tag}{}", w.f119);
    w.f120 = format!("{tag}{}", w.f120);
    w.f121 = format!("{tag}{}", w.f121);
    w.f122 = format!("{tag}{}", w.f122);
    w.f123 = format!("{tag}{}", w.f123);
    w.f124 = format!("{tag}{}", w.f124);
    w.f125 = format!("{tag}{}", w.f125);
    w.f126 = format!("{tag}{}", w.f126);
    w.f127 = format!("{tag}{}", w.f127);
    w.f128 = format!("{tag}{}", w.f128);
    w.f129 = format!("{tag}{}", w.f129);
    w.f130 = format!("{tag}{}", w.f130);
    w.f131 = format!("{tag}{}", w.f131);
    w.f132 = format!("{tag}{}", w.f132);
    w.f133 = format!("{tag}{}", w.f133);
    w.f134 = format!("{tag}{}", w.f134);
    w.f135 = format!("{tag}{}", w.f135);
    w.f136 = format!("{tag}{}", w.f136);
    w.f137 = format!("{tag}{}", w.f137);
    w.f138 = format!("{tag}{}", w.f138);
    w.f139 = format!("{tag}{}", w.f139);
    w.f140 = format!("{tag}{}", w.f140);
    w.f141 = format!("{tag}{}", w.f141);
    w.f142 = format!("{tag}{}", w.f142);
    w.f143 = format!("{tag}{}", w.f143);
    w.f144 = format!("{tag}{}", w.f144);
    w.f145 = format!("{tag}{}", w.f145);
    w.f146 = format!("{tag}{}", w.f146);
    w.f147 = format!("{tag}{}", w.f147);
    w.f148 = format!("{tag}{}", w.f148);
    w.f149 = format!("{tag}{}", w.f149);
    w.f150 = format!("{tag}{}", w.f150);
    w.f151 = format!("{tag}{}", w.f151);
    w.f152 = format!("{tag}{}", w.f152);
    w.f153 = format!("{tag}{}", w.f153);
    w.f154 = format!("{tag}{}", w.f154);
    w.f155 = format!("{tag}{}", w.f155);
    w.f156 = format!("{tag}{}", w.f156);
    w.f157 = format!("{tag}{}", w.f157);
    w.f158 = format!("{tag}{}", w.f158);
    w.f159 = format!("{tag}{}", w.f159);
    w.f160 = format!("{tag}{}", w.f160);
    w.f161 = format!("{tag}{}", w.f161);
    w.f162 = format!("{tag}{}", w.f162);
    w.f163 = format!("{tag}{}", w.f163);
    w.f164 = format!("{tag}{}", w.f164);
    w.f165 = format!("{tag}{}", w.f165);
    w.f166 = format!("{tag}{}", w.f166);
    w.f167 = format!("{tag}{}", w.f167);
    w.f168 = format!("{tag}{}", w.f168);
    w.f169 = format!("{tag}{}", w.f169);
    w.f170 = format!("{tag}{}", w.f170);
    w.f171 = format!("{tag}{}", w.f171);
    w.f172 = format!("{tag}{}", w.f172);
    w.f173 = format!("{tag}{}", w.f173);
    w.f174 = format!("{tag}{}", w.f174);
    w.f175 = format!("{tag}{}", w.f175);
    w.f176 = format!("{tag}{}", w.f176);
    w.f177 = format!("{tag}{}", w.f177);
    w.f178 = format!("{tag}{}", w.f178);
    w.f179 = format!("{tag}{}", w.f179);
    w.f180 = format!("{tag}{}", w.f180);
    w.f181 = format!("{tag}{}", w.f181);
    w.f182 = format!("{tag}{}", w.f182);
    w.f183 = format!("{tag}{}", w.f183);
    w.f184 = format!("{tag}{}", w.f184);
    w.f185 = format!("{tag}{}", w.f185);
    w.f186 = format!("{tag}{}", w.f186);
    w.f187 = format!("{tag}{}", w.f187);
    w.f188 = format!("{tag}{}", w.f188);
    w.f189 = format!("{tag}{}", w.f189);
    w.f190 = format!("{tag}{}", w.f190);
    w.f191 = format!("{tag}{}", w.f191);
    w.f192 = format!("{tag}{}", w.f192);
    w.f193 = format!("{tag}{}", w.f193);
    w.f194 = format!("{tag}{}", w.f194);
    w.f195 = format!("{tag}{}", w.f195);
    w.f196 = format!("{tag}{}", w.f196);
    w.f197 = format!("{tag}{}", w.f197);
    w.f198 = format!("{tag}{}", w.f198);
    w.f199 = format!("{tag}{}", w.f199);
    w.f200 = format!("{tag}{}", w.f200);
    w.f201 = format!("{tag}{}", w.f201);
    w.f202 = format!("{tag}{}", w.f202);
    w.f203 = format!("{tag}{}", w.f203);
    w.f204 = format!("{tag}{}", w.f204);
    w.f205 = format!("{tag}{}", w.f205);
    w.f206 = format!("{tag}{}", w.f206);
    w.f207 = format!("{tag}{}", w.f207);
    w.f208 = format!("{tag}{}", w.f208);
    w.f209 = format!("{tag}{}", w.f209);
    w.f210 = format!("{tag}{}", w.f210);
    w.f211 = format!("{tag}{}", w.f211);
    w.f212 = format!("{tag}{}", w.f212);
    w.f213 = format!("{tag}{}", w.f213);
    w.f214 = format!("{tag}{}", w.f214);
    w.f215 = format!("{tag}{}", w.f215);
    w.f216 = format!("{tag}{}", w.f216);
    w.f217 = format!("{tag}{}", w.f217);
    w.f218 = format!("{tag}{}", w.f218);
    w.f219 = format!("{tag}{}", w.f219);
    w.f220 = format!("{tag}{}", w.f220);
    w.f221 = format!("{tag}{}", w.f221);
    w.f222 = format!("{tag}{}", w.f222);
    w.f223 = format!("{tag}{}", w.f223);
    w.f224 = format!("{tag}{}", w.f224);
    w.f225 = format!("{tag}{}", w.f225);
    w.f226 = format!("{tag}{}", w.f226);
    w.f227 = format!("{tag}{}", w.f227);
    w.f228 = format!("{tag}{}", w.f228);
    w.f229 = format!("{tag}{}", w.f229);
    w.f230 = format!("{tag}{}", w.f230);
    w.f231 = format!("{tag}{}", w.f231);
    w.f232 = format!("{tag}{}", w.f232);
    w.f233 = format!("{tag}{}", w.f233);
    w.f234 = format!("{tag}{}", w.f234);
    w.f235 = format!("{tag}{}", w.f235);
    w.f236 = format!("{tag}{}", w.f236);
    w.f237 = format!("{tag}{}", w.f237);
    w.f238 = format!("{tag}{}", w.f238);
    w.f239 = format!("{tag}{}", w.f239);
    w.f240 = format!("{tag}{}", w.f240);
    w.f241 = format!("{tag}{}", w.f241);
    w.f242 = format!("{tag}{}", w.f242);
    w.f243 = format!("{tag}{}", w.f243);
    w.f244 = format!("{tag}{}", w.f244);
    w.f245 = format!("{tag}{}", w.f245);
    w.f246 = format!("{tag}{}", w.f246);
    w.f247 = format!("{tag}{}", w.f247);
    w.f248 = format!("{tag}{}", w.f248);
    w.f249 = format!("{tag}{}", w.f249);
    w.f250 = format!("{tag}{}", w.f250);
    w.f251 = format!("{tag}{}", w.f251);
    w.f252 = format!("{tag}{}", w.f252);
    w.f253 = format!("{tag}{}", w.f253);
    w.f254 = format!("{tag}{}", w.f254);
    w.f255 = format!("{tag}{}", w.f255);
    w.f256 = format!("{tag}{}", w.f256);
    w.f257 = format!("{tag}{}", w.f257);
    w.f258 = format!("{tag}{}", w.f258);
    w.f259 = format!("{tag}{}", w.f259);
    w.f260 = format!("{tag}{}", w.f260);
    w.f261 = format!("{tag}{}", w.f261);
    w.f262 = format!("{tag}{}", w.f262);
    w.f263 = format!("{tag}{}", w.f263);
    w.f264 = format!("{tag}{}", w.f264);
    w.f265 = format!("{tag}{}", w.f265);
    w.f266 = format!("{tag}{}", w.f266);
    w.f267 = format!("{tag}{}", w.f267);
    w.f268 = format!("{tag}{}", w.f268);
    w.f269 = format!("{tag}{}", w.f269);
    w.f270 = format!("{tag}{}", w.f270);
    w.f271 = format!("{tag}{}", w.f271);
    w.f272 = format!("{tag}{}", w.f272);
    w.f273 = format!("{tag}{}", w.f273);
    w.f274 = format!("{tag}{}", w.f274);
    w.f275 = format!("{tag}{}", w.f275);
    w.f276 = format!("{tag}{}", w.f276);
    w.f277 = format!("{tag}{}", w.f277);
    w.f278 = format!("{tag}{}", w.f278);
    w.f279 = format!("{tag}{}", w.f279);
    w.f280 = format!("{tag}{}", w.f280);
    w.f281 = format!("{tag}{}", w.f281);
    w.f282 = format!("{tag}{}", w.f282);
    w.f283 = format!("{tag}{}", w.f283);
    w.f284 = format!("{tag}{}", w.f284);
    w.f285 = format!("{tag}{}", w.f285);
    w.f286 = format!("{tag}{}", w.f286);
    w.f287 = format!("{tag}{}", w.f287);
    w.f288 = format!("{tag}{}", w.f288);
    w.f289 = format!("{tag}{}", w.f289);
    w.f290 = format!("{tag}{}", w.f290);
    w.f291 = format!("{tag}{}", w.f291);
    w.f292 = format!("{tag}{}", w.f292);
    w.f293 = format!("{tag}{}", w.f293);
    w.f294 = format!("{tag}{}", w.f294);
    w.f295 = format!("{tag}{}", w.f295);
    w.f296 = format!("{tag}{}", w.f296);
    w.f297 = format!("{tag}{}", w.f297);
    w.f298 = format!("{tag}{}", w.f298);
    w.f299 = format!("{tag}{}", w.f299);
}

fn stamp_bare(w: &mut Bare, tag: &str) {
    w.f000 = format!("{tag}{}", w.f000);
    w.f001 = format!("{tag}{}", w.f001);
    w.f002 = format!("{tag}{}", w.f002);
    w.f003 = format!("{tag}{}", w.f003);
    w.f004 = format!("{tag}{}", w.f004);
    w.f005 = format!("{tag}{}", w.f005);
    w.f006 = format!("{tag}{}", w.f006);
    w.f007 = format!("{tag}{}", w.f007);
    w.f008 = format!("{tag}{}", w.f008);
    w.f009 = format!("{tag}{}", w.f009);
    w.f010 = format!("{tag}{}", w.f010);
    w.f011 = format!("{tag}{}", w.f011);
    w.f012 = format!("{tag}{}", w.f012);
    w.f013 = format!("{tag}{}", w.f013);
    w.f014 = format!("{tag}{}", w.f014);
    w.f015 = format!("{tag}{}", w.f015);
    w.f016 = format!("{tag}{}", w.f016);
    w.f017 = format!("{tag}{}", w.f017);
    w.f018 = format!("{tag}{}", w.f018);
    w.f019 = format!("{tag}{}", w.f019);
    w.f020 = format!("{tag}{}", w.f020);
    w.f021 = format!("{tag}{}", w.f021);
    w.f022 = format!("{tag}{}", w.f022);
    w.f023 = format!("{tag}{}", w.f023);
    w.f024 = format!("{tag}{}", w.f024);
    w.f025 = format!("{tag}{}", w.f025);
    w.f026 = format!("{tag}{}", w.f026);
    w.f027 = format!("{tag}{}", w.f027);
    w.f028 = format!("{tag}{}", w.f028);
    w.f029 = format!("{tag}{}", w.f029);
    w.f030 = format!("{tag}{}", w.f030);
    w.f031 = format!("{tag}{}", w.f031);
    w.f032 = format!("{tag}{}", w.f032);
    w.f033 = format!("{tag}{}", w.f033);
    w.f034 = format!("{tag}{}", w.f034);
    w.f035 = format!("{tag}{}", w.f035);
    w.f036 = format!("{tag}{}", w.f036);
    w.f037 = format!("{tag}{}", w.f037);
    w.f038 = format!("{tag}{}", w.f038);
    w.f039 = format!("{tag}{}", w.f039);
    w.f040 = format!("{tag}{}", w.f040);
    w.f041 = format!("{tag}{}", w.f041);
    w.f042 = format!("{tag}{}", w.f042);
    w.f043 = format!("{tag}{}", w.f043);
    w.f044 = format!("{tag}{}", w.f044);
    w.f045 = format!("{tag}{}", w.f045);
    w.f046 = format!("{tag}{}", w.f046);
    w.f047 = format!("{tag}{}", w.f047);
    w.f048 = format!("{tag}{}", w.f048);
    w.f049 = format!("{tag}{}", w.f049);
    w.f050 = format!("{tag}{}", w.f050);
    w.f051 = format!("{tag}{}", w.f051);
    w.f052 = format!("{tag}{}", w.f052);
    w.f053 = format!("{tag}{}", w.f053);
    w.f054 = format!("{tag}{}", w.f054);
    w.f055 = format!("{tag}{}", w.f055);
    w.f056 = format!("{tag}{}", w.f056);
    w.f057 = format!("{tag}{}", w.f057);
    w.f058 = format!("{tag}{}", w.f058);
    w.f059 = format!("{tag}{}", w.f059);
    w.f060 = format!("{tag}{}", w.f060);
    w.f061 = format!("{tag}{}", w.f061);
    w.f062 = format!("{tag}{}", w.f062);
    w.f063 = format!("{tag}{}", w.f063);
    w.f064 = format!("{tag}{}", w.f064);
    w.f065 = format!("{tag}{}", w.f065);
    w.f066 = format!("{tag}{}", w.f066);
    w.f067 = format!("{tag}{}", w.f067);
    w.f068 = format!("{tag}{}", w.f068);
    w.f069 = format!("{tag}{}", w.f069);
    w.f070 = format!("{tag}{}", w.f070);
    w.f071 = format!("{tag}{}", w.f071);
    w.f072 = format!("{tag}{}", w.f072);
    w.f073 = format!("{tag}{}", w.f073);
    w.f074 = format!("{tag}{}", w.f074);
    w.f075 = format!("{tag}{}", w.f075);
    w.f076 = format!("{tag}{}", w.f076);
    w.f077 = format!("{tag}{}", w.f077);
    w.f078 = format!("{tag}{}", w.f078);
    w.f079 = format!("{tag}{}", w.f079);
    w.f080 = format!("{tag}{}", w.f080);
    w.f081 = format!("{tag}{}", w.f081);
    w.f082 = format!("{tag}{}", w.f082);
    w.f083 = format!("{tag}{}", w.f083);
    w.f084 = format!("{tag}{}", w.f084);
    w.f085 = format!("{tag}{}", w.f085);
    w.f086 = format!("{tag}{}", w.f086);
    w.f087 = format!("{tag}{}", w.f087);
    w.f088 = format!("{tag}{}", w.f088);
    w.f089 = format!("{tag}{}", w.f089);
    w.f090 = format!("{tag}{}", w.f090);
    w.f091 = format!("{tag}{}", w.f091);
    w.f092 = format!("{tag}{}", w.f092);
    w.f093 = format!("{tag}{}", w.f093);
    w.f094 = format!("{tag}{}", w.f094);
    w.f095 = format!("{tag}{}", w.f095);
    w.f096 = format!("{tag}{}", w.f096);
    w.f097 = format!("{tag}{}", w.f097);
    w.f098 = format!("{tag}{}", w.f098);
    w.f099 = format!("{tag}{}", w.f099);
    w.f100 = format!("{tag}{}", w.f100);
    w.f101 = format!("{tag}{}", w.f101);
    w.f102 = format!("{tag}{}", w.f102);
    w.f103 = format!("{tag}{}", w.f103);
    w.f104 = format!("{tag}{}", w.f104);
    w.f105 = format!("{tag}{}", w.f105);
    w.f106 = format!("{tag}{}", w.f106);
    w.f107 = format!("{tag}{}", w.f107);
    w.f108 = format!("{tag}{}", w.f108);
    w.f109 = format!("{tag}{}", w.f109);
    w.f110 = format!("{tag}{}", w.f110);
    w.f111 = format!("{tag}{}", w.f111);
    w.f112 = format!("{tag}{}", w.f112);
    w.f113 = format!("{tag}{}", w.f113);
    w.f114 = format!("{tag}{}", w.f114);
    w.f115 = format!("{tag}{}", w.f115);
    w.f116 = format!("{tag}{}", w.f116);
    w.f117 = format!("{tag}{}", w.f117);
    w.f118 = format!("{tag}{}", w.f118);
    w.f119 = format!("{tag}{}", w.f119);
    w.f120 = format!("{tag}{}", w.f120);
    w.f121 = format!("{tag}{}", w.f121);
    w.f122 = format!("{tag}{}", w.f122);
    w.f123 = format!("{tag}{}", w.f123);
    w.f124 = format!("{tag}{}", w.f124);
    w.f125 = format!("{tag}{}", w.f125);
    w.f126 = format!("{tag}{}", w.f126);
    w.f127 = format!("{tag}{}", w.f127);
    w.f128 = format!("{tag}{}", w.f128);
    w.f129 = format!("{tag}{}", w.f129);
    w.f130 = format!("{tag}{}", w.f130);
    w.f131 = format!("{tag}{}", w.f131);
    w.f132 = format!("{tag}{}", w.f132);
    w.f133 = format!("{tag}{}", w.f133);
    w.f134 = format!("{tag}{}", w.f134);
    w.f135 = format!("{tag}{}", w.f135);
    w.f136 = format!("{tag}{}", w.f136);
    w.f137 = format!("{tag}{}", w.f137);
    w.f138 = format!("{tag}{}", w.f138);
    w.f139 = format!("{tag}{}", w.f139);
    w.f140 = format!("{tag}{}", w.f140);
    w.f141 = format!("{tag}{}", w.f141);
    w.f142 = format!("{tag}{}", w.f142);
    w.f143 = format!("{tag}{}", w.f143);
    w.f144 = format!("{tag}{}", w.f144);
    w.f145 = format!("{tag}{}", w.f145);
    w.f146 = format!("{tag}{}", w.f146);
    w.f147 = format!("{tag}{}", w.f147);
    w.f148 = format!("{tag}{}", w.f148);
    w.f149 = format!("{tag}{}", w.f149);
    w.f150 = format!("{tag}{}", w.f150);
    w.f151 = format!("{tag}{}", w.f151);
    w.f152 = format!("{tag}{}", w.f152);
    w.f153 = format!("{tag}{}", w.f153);
    w.f154 = format!("{tag}{}", w.f154);
    w.f155 = format!("{tag}{}", w.f155);
    w.f156 = format!("{tag}{}", w.f156);
    w.f157 = format!("{tag}{}", w.f157);
    w.f158 = format!("{tag}{}", w.f158);
    w.f159 = format!("{tag}{}", w.f159);
    w.f160 = format!("{tag}{}", w.f160);
    w.f161 = format!("{tag}{}", w.f161);
    w.f162 = format!("{tag}{}", w.f162);
    w.f163 = format!("{tag}{}", w.f163);
    w.f164 = format!("{tag}{}", w.f164);
    w.f165 = format!("{tag}{}", w.f165);
    w.f166 = format!("{tag}{}", w.f166);
    w.f167 = format!("{tag}{}", w.f167);
    w.f168 = format!("{tag}{}", w.f168);
    w.f169 = format!("{tag}{}", w.f169);
    w.f170 = format!("{tag}{}", w.f170);
    w.f171 = format!("{tag}{}", w.f171);
    w.f172 = format!("{tag}{}", w.f172);
    w.f173 = format!("{tag}{}", w.f173);
    w.f174 = format!("{tag}{}", w.f174);
    w.f175 = format!("{tag}{}", w.f175);
    w.f176 = format!("{tag}{}", w.f176);
    w.f177 = format!("{tag}{}", w.f177);
    w.f178 = format!("{tag}{}", w.f178);
    w.f179 = format!("{tag}{}", w.f179);
    w.f180 = format!("{tag}{}", w.f180);
    w.f181 = format!("{tag}{}", w.f181);
    w.f182 = format!("{tag}{}", w.f182);
    w.f183 = format!("{tag}{}", w.f183);
    w.f184 = format!("{tag}{}", w.f184);
    w.f185 = format!("{tag}{}", w.f185);
    w.f186 = format!("{tag}{}", w.f186);
    w.f187 = format!("{tag}{}", w.f187);
    w.f188 = format!("{tag}{}", w.f188);
    w.f189 = format!("{tag}{}", w.f189);
    w.f190 = format!("{tag}{}", w.f190);
    w.f191 = format!("{tag}{}", w.f191);
    w.f192 = format!("{tag}{}", w.f192);
    w.f193 = format!("{tag}{}", w.f193);
    w.f194 = format!("{tag}{}", w.f194);
    w.f195 = format!("{tag}{}", w.f195);
    w.f196 = format!("{tag}{}", w.f196);
    w.f197 = format!("{tag}{}", w.f197);
    w.f198 = format!("{tag}{}", w.f198);
    w.f199 = format!("{tag}{}", w.f199);
    w.f200 = format!("{tag}{}", w.f200);
    w.f201 = format!("{tag}{}", w.f201);
    w.f202 = format!("{tag}{}", w.f202);
    w.f203 = format!("{tag}{}", w.f203);
    w.f204 = format!("{tag}{}", w.f204);
    w.f205 = format!("{tag}{}", w.f205);
    w.f206 = format!("{tag}{}", w.f206);
    w.f207 = format!("{tag}{}", w.f207);
    w.f208 = format!("{tag}{}", w.f208);
    w.f209 = format!("{tag}{}", w.f209);
    w.f210 = format!("{tag}{}", w.f210);
    w.f211 = format!("{tag}{}", w.f211);
    w.f212 = format!("{tag}{}", w.f212);
    w.f213 = format!("{tag}{}", w.f213);
    w.f214 = format!("{tag}{}", w.f214);
    w.f215 = format!("{tag}{}", w.f215);
    w.f216 = format!("{tag}{}", w.f216);
    w.f217 = format!("{tag}{}", w.f217);
    w.f218 = format!("{tag}{}", w.f218);
    w.f219 = format!("{tag}{}", w.f219);
    w.f220 = format!("{tag}{}", w.f220);
    w.f221 = format!("{tag}{}", w.f221);
    w.f222 = format!("{tag}{}", w.f222);
    w.f223 = format!("{tag}{}", w.f223);
    w.f224 = format!("{tag}{}", w.f224);
    w.f225 = format!("{tag}{}", w.f225);
    w.f226 = format!("{tag}{}", w.f226);
    w.f227 = format!("{tag}{}", w.f227);
    w.f228 = format!("{tag}{}", w.f228);
    w.f229 = format!("{tag}{}", w.f229);
    w.f230 = format!("{tag}{}", w.f230);
    w.f231 = format!("{tag}{}", w.f231);
    w.f232 = format!("{tag}{}", w.f232);
    w.f233 = format!("{tag}{}", w.f233);
    w.f234 = format!("{tag}{}", w.f234);
    w.f235 = format!("{tag}{}", w.f235);
    w.f236 = format!("{tag}{}", w.f236);
    w.f237 = format!("{tag}{}", w.f237);
    w.f238 = format!("{tag}{}", w.f238);
    w.f239 = format!("{tag}{}", w.f239);
    w.f240 = format!("{tag}{}", w.f240);
    w.f241 = format!("{tag}{}", w.f241);
    w.f242 = format!("{tag}{}", w.f242);
    w.f243 = format!("{tag}{}", w.f243);
    w.f244 = format!("{tag}{}", w.f244);
    w.f245 = format!("{tag}{}", w.f245);
    w.f246 = format!("{tag}{}", w.f246);
    w.f247 = format!("{tag}{}", w.f247);
    w.f248 = format!("{tag}{}", w.f248);
    w.f249 = format!("{tag}{}", w.f249);
    w.f250 = format!("{tag}{}", w.f250);
    w.f251 = format!("{tag}{}", w.f251);
    w.f252 = format!("{tag}{}", w.f252);
    w.f253 = format!("{tag}{}", w.f253);
    w.f254 = format!("{tag}{}", w.f254);
    w.f255 = format!("{tag}{}", w.f255);
    w.f256 = format!("{tag}{}", w.f256);
    w.f257 = format!("{tag}{}", w.f257);
    w.f258 = format!("{tag}{}", w.f258);
    w.f259 = format!("{tag}{}", w.f259);
    w.f260 = format!("{tag}{}", w.f260);
    w.f261 = format!("{tag}{}", w.f261);
    w.f262 = format!("{tag}{}", w.f262);
    w.f263 = format!("{tag}{}", w.f263);
    w.f264 = format!("{tag}{}", w.f264);
    w.f265 = format!("{tag}{}", w.f265);
    w.f266 = format!("{tag}{}", w.f266);
    w.f267 = format!("{tag}{}", w.f267);
    w.f268 = format!("{tag}{}", w.f268);
    w.f269 = format!("{tag}{}", w.f269);
    w.f270 = format!("{tag}{}", w.f270);
    w.f271 = format!("{tag}{}", w.f271);
    w.f272 = format!("{tag}{}", w.f272);
    w.f273 = format!("{tag}{}", w.f273);
    w.f274 = format!("{tag}{}", w.f274);
    w.f275 = format!("{tag}{}", w.f275);
    w.f276 = format!("{tag}{}", w.f276);
    w.f277 = format!("{tag}{}", w.f277);
    w.f278 = format!("{tag}{}", w.f278);
    w.f279 = format!("{tag}{}", w.f279);
    w.f280 = format!("{tag}{}", w.f280);
    w.f281 = format!("{tag}{}", w.f281);
    w.f282 = format!("{tag}{}", w.f282);
    w.f283 = format!("{tag}{}", w.f283);
    w.f284 = format!("{tag}{}", w.f284);
    w.f285 = format!("{tag}{}", w.f285);
    w.f286 = format!("{tag}{}", w.f286);
    w.f287 = format!("{tag}{}", w.f287);
    w.f288 = format!("{tag}{}", w.f288);
    w.f289 = format!("{tag}{}", w.f289);
    w.f290 = format!("{tag}{}", w.f290);
    w.f291 = format!("{tag}{}", w.f291);
    w.f292 = format!("{tag}{}", w.f292);
    w.f293 = format!("{tag}{}", w.f293);
    w.f294 = format!("{tag}{}", w.f294);
    w.f295 = format!("{tag}{}", w.f295);
    w.f296 = format!("{tag}{}", w.f296);
    w.f297 = format!("{tag}{}", w.f297);
    w.f298 = format!("{tag}{}", w.f298);
    w.f299 = format!("{tag}{}", w.f299);
}

/// Sets every field to `tag` and its number.
fn set_every_wide(tag: &str) -> Changes<Wide> {
    let f = Wide::FIELDS;
    Changes::new()
        .set(f.f000, format!("{tag}000"))
        .set(f.f001, format!("{tag}001"))
        .set(f.f002, format!("{tag}002"))
        .set(f.f003, format!("{tag}003"))
        .set(f.f004, format!("{tag}004"))
        .set(f.f005, format!("{tag}005"))
        .set(f.f006, format!("{tag}006"))
        .set(f.f007, format!("{tag}007"))
        .set(f.f008, format!("{tag}008"))
        .set(f.f009, format!("{tag}009"))
        .set(f.f010, format!("{tag}010"))
        .set(f.f011, format!("{tag}011"))
        .set(f.f012, format!("{tag}012"))
        .set(f.f013, format!("{tag}013"))
        .set(f.f014, format!("{tag}014"))
        .set(f.f015, format!("{tag}015"))
        .set(f.f016, format!("{tag}016"))
        .set(f.f017, format!("{tag}017"))
        .set(f.f018, format!("{tag}018"))
        .set(f.f019, format!("{tag}019"))
        .set(f.f020, format!("{tag}020"))
        .set(f.f021, format!("{tag}021"))
        .set(f.f022, format!("{tag}022"))
        .set(f.f023, format!("{tag}023"))
        .set(f.f024, format!("{tag}024"))
        .set(f.f025, format!("{tag}025"))
        .set(f.f026, format!("{tag}026"))
        .set(f.f027, format!("{tag}027"))
        .set(f.f028, format!("{tag}028"))
        .set(f.f029, format!("{tag}029"))
        .set(f.f030, format!("{tag}030"))
        .set(f.f031, format!("{tag}031"))
        .set(f.f032, format!("{tag}032"))
        .set(f.f033, format!("{tag}033"))
        .set(f.f034, format!("{tag}034"))
        .set(f.f035, format!("{tag}035"))
        .set(f.f036, format!("{tag}036"))
        .set(f.f037, format!("{tag}037"))
        .set(f.f038, format!("{tag}038"))
        .set(f.f039, format!("{tag}039"))
        .set(f.f040, format!("{tag}040"))
        .set(f.f041, format!("{tag}041"))
        .set(f.f042, format!("{tag}042"))
        .set(f.f043, format!("{tag}043"))
        .set(f.f044, format!("{tag}044"))
        .set(f.f045, format!("{tag}045"))
        .set(f.f046, format!("{tag}046"))
        .set(f.f047, format!("{tag}047"))
        .set(f.f048, format!("{tag}048"))
        .set(f.f049, format!("{tag}049"))
        .set(f.f050, format!("{tag}050"))
        .set(f.f051, format!("{tag}051"))
        .set(f.f052, format!("{tag}052"))
        .set(f.f053, format!("{tag}053"))
        .set(f.f054, format!("{tag}054"))
        .set(f.f055, format!("{tag}055"))
        .set(f.f056, format!("{tag}056"))
        .set(f.f057, format!("{tag}057"))
        .set(f.f058, format!("{tag}058"))
        .set(f.f059, format!("{tag}059"))
        .set(f.f060, format!("{tag}060"))
        .set(f.f061, format!("{tag}061"))
        .set(f.f062, format!("{tag}062"))
        .set(f.f063, format!("{tag}063"))
        .set(f.f064, format!("{tag}064"))
        .set(f.f065, format!("{tag}065"))
        .set(f.f066, format!("{tag}066"))
        .set(f.f067, format!("{tag}067"))
        .set(f.f068, format!("{tag}068"))
        .set(f.f069, format!("{tag}069"))
        .set(f.f070, format!("{tag}070"))
        .set(f.f071, format!("{tag}071"))
        .set(f.f072, format!("{tag}072"))
        .set(f.f073, format!("{tag}073"))
        .set(f.f074, format!("{tag}074"))
        .set(f.f075, format!("{tag}075"))
        .set(f.f076, format!("{tag}076"))
        .set(f.f077, format!("{tag}077"))
        .set(f.f078, format!("{tag}078"))
        .set(f.f079, format!("{tag}079"))
        .set(f.f080, format!("{tag}080"))
        .set(f.f081, format!("{tag}081"))
        .set(f.f082, format!("{tag}082"))
        .set(f.f083, format!("{tag}083"))
        .set(f.f084, format!("{tag}084"))
        .set(f.f085, format!("{tag}085"))
        .set(f.f086, format!("{tag}086"))
        .set(f.f087, format!("{tag}087"))
        .set(f.f088, format!("{tag}088"))
        .set(f.f089, format!("{tag}089"))
        .set(f.f090, format!("{tag}090"))
        .set(f.f091, format!("{tag}091"))
        .set(f.f092, format!("{tag}092"))
        .set(f.f093, format!("{tag}093"))
        .set(f.f094, format!("{tag}094"))
        .set(f.f095, format!("{tag}095"))
        .set(f.f096, format!("{tag}096"))
        .set(f.f097, format!("{tag}097"))
        .set(f.f098, format!("{tag}098"))
        .set(f.f099, format!("{tag}099"))
        .set(f.f100, format!("{tag}100"))
        .set(f.f101, format!("{tag}101"))
        .set(f.f102, format!("{tag}102"))
        .set(f.f103, format!("{tag}103"))
        .set(f.f104, format!("{tag}104"))
        .set(f.f105, format!("{tag}105"))
        .set(f.f106, format!("{tag}106"))
        .set(f.f107, format!("{tag}107"))
        .set(f.f108, format!("{tag}108"))
        .set(f.f109, format!("{tag}109"))
        .set(f.f110, format!("{tag}110"))
        .set(f.f111, format!("{tag}111"))
        .set(f.f112, format!("{tag}112"))
        .set(f.f113, format!("{tag}113"))
        .set(f.f114, format!("{tag}114"))
        .set(f.f115, format!("{tag}115"))
        .set(f.f116, format!("{tag}116"))
        .set(f.f117, format!("{tag}117"))
        .set(f.f118, format!("{tag}118"))
        .set(f.f119, format!("{tag}119"))
        .set(f.f120, format!("{tag}120"))
        .set(f.f121, format!("{tag}121"))
        .set(f.f122, format!("{tag}122"))
        .set(f.f123, format!("{tag}123"))
        .set(f.f124, format!("{tag}124"))
        .set(f.f125, format!("{tag}125"))
        .set(f.f126, format!("{tag}126"))
        .set(f.f127, format!("{tag}127"))
        .set(f.f128, format!("{tag}128"))
        .set(f.f129, format!("{tag}129"))
        .set(f.f130, format!("{tag}130"))
        .set(f.f131, format!("{tag}131"))
        .set(f.f132, format!("{tag}132"))
        .set(f.f133, format!("{tag}133"))
        .set(f.f134, format!("{tag}134"))
        .set(f.f135, format!("{tag}135"))
        .set(f.f136, format!("{tag}136"))
        .set(f.f137, format!("{tag}137"))
        .set(f.f138, format!("{tag}138"))
        .set(f.f139, format!("{tag}139"))
        .set(f.f140, format!("{tag}140"))
        .set(f.f141, format!("{tag}141"))
        .set(f.f142, format!("{tag}142"))
        .set(f.f143, format!("{tag}143"))
        .set(f.f144, format!("{tag}144"))
        .set(f.f145, format!("{tag}145"))
        .set(f.f146, format!("{tag}146"))
        .set(f.f147, format!("{tag}147"))
        .set(f.f148, format!("{tag}148"))
        .set(f.f149, format!("{tag}149"))
        .set(f.f150, format!("{tag}150"))
        .set(f.f151, format!("{tag}151"))
        .set(f.f152, format!("{tag}152"))
        .set(f.f153, format!("{tag}153"))
        .set(f.f154, format!("{tag}154"))
        .set(f.f155, format!("{tag}155"))
        .set(f.f156, format!("{tag}156"))
        .set(f.f157, format!("{tag}157"))
        .set(f.f158, format!("{tag}158"))
        .set(f.f159, format!("{tag}159"))
        .set(f.f160, format!("{tag}160"))
        .set(f.f161, format!("{tag}161"))
        .set(f.f162, format!("{tag}162"))
        .set(f.f163, format!("{tag}163"))
        .set(f.f164, format!("{tag}164"))
        .set(f.f165, format!("{tag}165"))
        .set(f.f166, format!("{tag}166"))
        .set(f.f167, format!("{tag}167"))
        .set(f.f168, format!("{tag}168"))
        .set(f.f169, format!("{tag}169"))
        .set(f.f170, format!("{tag}170"))
        .set(f.f171, format!("{tag}171"))
        .set(f.f172, format!("{tag}172"))
        .set(f.f173, format!("{tag}173"))
        .set(f.f174, format!("{tag}174"))
        .set(f.f175, format!("{tag}175"))
        .set(f.f176, format!("{tag}176"))
        .set(f.f177, format!("{tag}177"))
        .set(f.f178, format!("{tag}178"))
        .set(f.f179, format!("{tag}179"))
        .set(f.f180, format!("{tag}180"))
        .set(f.f181, format!("{tag}181"))
        .set(f.f182, format!("{tag}182"))
        .set(f.f183, format!("{tag}183"))
        .set(f.f184, format!("{tag}184"))
        .set(f.f185, format!("{tag}185"))
        .set(f.f186, format!("{tag}186"))
        .set(f.f187, format!("{tag}187"))
        .set(f.f188, format!("{tag}188"))
        .set(f.f189, format!("{tag}189"))
        .set(f.f190, format!("{tag}190"))
        .set(f.f191, format!("{tag}191"))
        .set(f.f192, format!("{tag}192"))
        .set(f.f193, format!("{tag}193"))
        .set(f.f194, format!("{tag}194"))
        .set(f.f195, format!("{tag}195"))
        .set(f.f196, format!("{tag}196"))
        .set(f.f197, format!("{tag}197"))
        .set(f.f198, format!("{tag}198"))
        .set(f.f199, format!("{tag}199"))
        .set(f.f200, format!("{tag}200"))
        .set(f.f201, format!("{tag}201"))
        .set(f.f202, format!("{tag}202"))
        .set(f.f203, format!("{tag}203"))
        .set(f.f204, format!("{tag}204"))
        .set(f.f205, format!("{tag}205"))
        .set(f.f206, format!("{tag}206"))
        .set(f.f207, format!("{tag}207"))
        .set(f.f208, format!("{tag}208"))
        .set(f.f209, format!("{tag}209"))
        .set(f.f210, format!("{tag}210"))
        .set(f.f211, format!("{tag}211"))
        .set(f.f212, format!("{tag}212"))
        .set(f.f213, format!("{tag}213"))
        .set(f.f214, format!("{tag}214"))
        .set(f.f215, format!("{tag}215"))
        .set(f.f216, format!("{tag}216"))
        .set(f.f217, format!("{tag}217"))
        .set(f.f218, format!("{tag}218"))
        .set(f.f219, format!("{tag}219"))
        .set(f.f220, format!("{tag}220"))
        .set(f.f221, format!("{tag}221"))
        .set(f.f222, format!("{tag}222"))
        .set(f.f223, format!("{tag}223"))
        .set(f.f224, format!("{tag}224"))
        .set(f.f225, format!("{tag}225"))
        .set(f.f226, format!("{tag}226"))
        .set(f.f227, format!("{tag}227"))
        .set(f.f228, format!("{tag}228"))
        .set(f.f229, format!("{tag}229"))
        .set(f.f230, format!("{tag}230"))
        .set(f.f231, format!("{tag}231"))
        .set(f.f232, format!("{tag}232"))
        .set(f.f233, format!("{tag}233"))
        .set(f.f234, format!("{tag}234"))
        .set(f.f235, format!("{tag}235"))
        .set(f.f236, format!("{tag}236"))
        .set(f.f237, format!("{tag}237"))
        .set(f.f238, format!("{tag}238"))
        .set(f.f239, format!("{tag}239"))
        .set(f.f240, format!("{tag}240"))
        .set(f.f241, format!("{tag}241"))
        .set(f.f242, format!("{tag}242"))
        .set(f.f243, format!("{tag}243"))
        .set(f.f244, format!("{tag}244"))
        .set(f.f245, format!("{tag}245"))
        .set(f.f246, format!("{tag}246"))
        .set(f.f247, format!("{tag}247"))
        .set(f.f248, format!("{tag}248"))
        .set(f.f249, format!("{tag}249"))
        .set(f.f250, format!("{tag}250"))
        .set(f.f251, format!("{tag}251"))
        .set(f.f252, format!("{tag}252"))
        .set(f.f253, format!("{tag}253"))
        .set(f.f254, format!("{tag}254"))
        .set(f.f255, format!("{tag}255"))
        .set(f.f256, format!("{tag}256"))
        .set(f.f257, format!("{tag}257"))
        .set(f.f258, format!("{tag}258"))
        .set(f.f259, format!("{tag}259"))
        .set(f.f260, format!("{tag}260"))
        .set(f.f261, format!("{tag}261"))
        .set(f.f262, format!("{tag}262"))
        .set(f.f263, format!("{tag}263"))
        .set(f.f264, format!("{tag}264"))
        .set(f.f265, format!("{tag}265"))
        .set(f.f266, format!("{tag}266"))
        .set(f.f267, format!("{tag}267"))
        .set(f.f268, format!("{tag}268"))
        .set(f.f269, format!("{tag}269"))
        .set(f.f270, format!("{tag}270"))
        .set(f.f271, format!("{tag}271"))
        .set(f.f272, format!("{tag}272"))
        .set(f.f273, format!("{tag}273"))
        .set(f.f274, format!("{tag}274"))
        .set(f.f275, format!("{tag}275"))
        .set(f.f276, format!("{tag}276"))
        .set(f.f277, format!("{tag}277"))
        .set(f.f278, format!("{tag}278"))
        .set(f.f279, format!("{tag}279"))
        .set(f.f280, format!("{tag}280"))
        .set(f.f281, format!("{tag}281"))
        .set(f.f282, format!("{tag}282"))
        .set(f.f283, format!("{tag}283"))
        .set(f.f284, format!("{tag}284"))
        .set(f.f285, format!("{tag}285"))
        .set(f.f286, format!("{tag}286"))
        .set(f.f287, format!("{tag}287"))
        .set(f.f288, format!("{tag}288"))
        .set(f.f289, format!("{tag}289"))
        .set(f.f290, format!("{tag}290"))
        .set(f.f291, format!("{tag}291"))
        .set(f.f292, format!("{tag}292"))
        .set(f.f293, format!("{tag}293"))
        .set(f.f294, format!("{tag}294"))
        .set(f.f295, format!("{tag}295"))
        .set(f.f296, format!("{tag}296"))
        .set(f.f297, format!("{tag}297"))
        .set(f.f298, format!("{tag}298"))
        .set(f.f299, format!("{tag}299"))
}

fn set_every_bare(tag: &str) -> Changes<Bare> {
    let f = Bare::FIELDS;
    Changes::new()
        .set(f.f000, format!("{tag}000"))
        .set(f.f001, format!("{tag}001"))
        .set(f.f002, format!("{tag}002"))
        .set(f.f003, format!("{tag}003"))
        .set(f.f004, format!("{tag}004"))
        .set(f.f005, format!("{tag}005"))
        .set(f.f006, format!("{tag}006"))
        .set(f.f007, format!("{tag}007"))
        .set(f.f008, format!("{tag}008"))
        .set(f.f009, format!("{tag}009"))
        .set(f.f010, format!("{tag}010"))
        .set(f.f011, format!("{tag}011"))
        .set(f.f012, format!("{tag}012"))
        .set(f.f013, format!("{tag}013"))
        .set(f.f014, format!("{tag}014"))
        .set(f.f015, format!("{tag}015"))
        .set(f.f016, format!("{tag}016"))
        .set(f.f017, format!("{tag}017"))
        .set(f.f018, format!("{tag}018"))
        .set(f.f019, format!("{tag}019"))
        .set(f.f020, format!("{tag}020"))
        .set(f.f021, format!("{tag}021"))
        .set(f.f022, format!("{tag}022"))
        .set(f.f023, format!("{tag}023"))
        .set(f.f024, format!("{tag}024"))
        .set(f.f025, format!("{tag}025"))
        .set(f.f026, format!("{tag}026"))
        .set(f.f027, format!("{tag}027"))
        .set(f.f028, format!("{tag}028"))
        .set(f.f029, format!("{tag}029"))
        .set(f.f030, format!("{tag}030"))
        .set(f.f031, format!("{tag}031"))
        .set(f.f032, format!("{tag}032"))
        .set(f.f033, format!("{tag}033"))
        .set(f.f034, format!("{tag}034"))
        .set(f.f035, format!("{tag}035"))
        .set(f.f036, format!("{tag}036"))
        .set(f.f037, format!("{tag}037"))
        .set(f.f038, format!("{tag}038"))
        .set(f.f039, format!("{tag}039"))
        .set(f.f040, format!("{tag}040"))
        .set(f.f041, format!("{tag}041"))
        .set(f.f042, format!("{tag}042"))
        .set(f.f043, format!("{tag}043"))
        .set(f.f044, format!("{tag}044"))
        .set(f.f045, format!("{tag}045"))
        .set(f.f046, format!("{tag}046"))
        .set(f.f047, format!("{tag}047"))
        .set(f.f048, format!("{tag}048"))
        .set(f.f049, format!("{tag}049"))
        .set(f.f050, format!("{tag}050"))
        .set(f.f051, format!("{tag}051"))
        .set(f.f052, format!("{tag}052"))
        .set(f.f053, format!("{tag}053"))
        .set(f.f054, format!("{tag}054"))
        .set(f.f055, format!("{tag}055"))
        .set(f.f056, format!("{tag}056"))
        .set(f.f057, format!("{tag}057"))
        .set(f.f058, format!("{tag}058"))
        .set(f.f059, format!("{tag}059"))
        .set(f.f060, format!("{tag}060"))
        .set(f.f061, format!("{tag}061"))
        .set(f.f062, format!("{tag}062"))
        .set(f.f063, format!("{tag}063"))
        .set(f.f064, format!("{tag}064"))
        .set(f.f065, format!("{tag}065"))
        .set(f.f066, format!("{tag}066"))
        .set(f.f067, format!("{tag}067"))
        .set(f.f068, format!("{tag}068"))
        .set(f.f069, format!("{tag}069"))
        .set(f.f070, format!("{tag}070"))
        .set(f.f071, format!("{tag}071"))
        .set(f.f072, format!("{tag}072"))
        .set(f.f073, format!("{tag}073"))
        .set(f.f074, format!("{tag}074"))
        .set(f.f075, format!("{tag}075"))
        .set(f.f076, format!("{tag}076"))
        .set(f.f077, format!("{tag}077"))
        .set(f.f078, format!("{tag}078"))
        .set(f.f079, format!("{tag}079"))
        .set(f.f080, format!("{tag}080"))
        .set(f.f081, format!("{tag}081"))
        .set(f.f082, format!("{tag}082"))
        .set(f.f083, format!("{tag}083"))
        .set(f.f084, format!("{tag}084"))
        .set(f.f085, format!("{tag}085"))
        .set(f.f086, format!("{tag}086"))
        .set(f.f087, format!("{tag}087"))
        .set(f.f088, format!("{tag}088"))
        .set(f.f089, format!("{tag}089"))
        .set(f.f090, format!("{tag}090"))
        .set(f.f091, format!("{tag}091"))
        .set(f.f092, format!("{tag}092"))
        .set(f.f093, format!("{tag}093"))
        .set(f.f094, format!("{tag}094"))
        .set(f.f095, format!("{tag}095"))
        .set(f.f096, format!("{tag}096"))
        .set(f.f097, format!("{tag}097"))
        .set(f.f098, format!("{tag}098"))
        .set(f.f099, format!("{tag}099"))
        .set(f.f100, format!("{tag}100"))
        .set(f.f101, format!("{tag}101"))
        .set(f.f102, format!("{tag}102"))
        .set(f.f103, format!("{tag}103"))
        .set(f.f104, format!("{tag}104"))
        .set(f.f105, format!("{tag}105"))
        .set(f.f106, format!("{tag}106"))
        .set(f.f107, format!("{tag}107"))
        .set(f.f108, format!("{tag}108"))
        .set(f.f109, format!("{tag}109"))
        .set(f.f110, format!("{tag}110"))
        .set(f.f111, format!("{tag}111"))
        .set(f.f112, format!("{tag}112"))
        .set(f.f113, format!("{tag}113"))
        .set(f.f114, format!("{tag}114"))
        .set(f.f115, format!("{tag}115"))
        .set(f.f116, format!("{tag}116"))
        .set(f.f117, format!("{tag}117"))
        .set(f.f118, format!("{tag}118"))
        .set(f.f119, format!("{tag}119"))
        .set(f.f120, format!("{tag}120"))
        .set(f.f121, format!("{tag}121"))
        .set(f.f122, format!("{tag}122"))
        .set(f.f123, format!("{tag}123"))
        .set(f.f124, format!("{tag}124"))
        .set(f.f125, format!("{tag}125"))
        .set(f.f126, format!("{tag}126"))
        .set(f.f127, format!("{tag}127"))
        .set(f.f128, format!("{tag}128"))
        .set(f.f129, format!("{tag}129"))
        .set(f.f130, format!("{tag}130"))
        .set(f.f131, format!("{tag}131"))
        .set(f.f132, format!("{tag}132"))
        .set(f.f133, format!("{tag}133"))
        .set(f.f134, format!("{tag}134"))
        .set(f.f135, format!("{tag}135"))
        .set(f.f136, format!("{tag}136"))
        .set(f.f137, format!("{tag}137"))
        .set(f.f138, format!("{tag}138"))
        .set(f.f139, format!("{tag}139"))
        .set(f.f140, format!("{tag}140"))
        .set(f.f141, format!("{tag}141"))
        .set(f.f142, format!("{tag}142"))
        .set(f.f143, format!("{tag}143"))
        .set(f.f144, format!("{tag}144"))
        .set(f.f145, format!("{tag}145"))
        .set(f.f146, format!("{tag}146"))
        .set(f.f147, format!("{tag}147"))
        .set(f.f148, format!("{tag}148"))
        .set(f.f149, format!("{tag}149"))
        .set(f.f150, format!("{tag}150"))
        .set(f.f151, format!("{tag}151"))
        .set(f.f152, format!("{tag}152"))
        .set(f.f153, format!("{tag}153"))
        .set(f.f154, format!("{tag}154"))
        .set(f.f155, format!("{tag}155"))
        .set(f.f156, format!("{tag}156"))
        .set(f.f157, format!("{tag}157"))
        .set(f.f158, format!("{tag}158"))
        .set(f.f159, format!("{tag}159"))
        .set(f.f160, format!("{tag}160"))
        .set(f.f161, format!("{tag}161"))
        .set(f.f162, format!("{tag}162"))
        .set(f.f163, format!("{tag}163"))
        .set(f.f164, format!("{tag}164"))
        .set(f.f165, format!("{tag}165"))
        .set(f.f166, format!("{tag}166"))
        .set(f.f167, format!("{tag}167"))
        .set(f.f168, format!("{tag}168"))
        .set(f.f169, format!("{tag}169"))
        .set(f.f170, format!("{tag}170"))
        .set(f.f171, format!("{tag}171"))
        .set(f.f172, format!("{tag}172"))
        .set(f.f173, format!("{tag}173"))
        .set(f.f174, format!("{tag}174"))
        .set(f.f175, format!("{tag}175"))
        .set(f.f176, format!("{tag}176"))
        .set(f.f177, format!("{tag}177"))
        .set(f.f178, format!("{tag}178"))
        .set(f.f179, format!("{tag}179"))
        .set(f.f180, format!("{tag}180"))
        .set(f.f181, format!("{tag}181"))
        .set(f.f182, format!("{tag}182"))
        .set(f.f183, format!("{tag}183"))
        .set(f.f184, format!("{tag}184"))
        .set(f.f185, format!("{tag}185"))
        .set(f.f186, format!("{tag}186"))
        .set(f.f187, format!("{tag}187"))
        .set(f.f188, format!("{tag}188"))
        .set(f.f189, format!("{tag}189"))
        .set(f.f190, format!("{tag}190"))
        .set(f.f191, format!("{tag}191"))
        .set(f.f192, format!("{tag}192"))
        .set(f.f193, format!("{tag}193"))
        .set(f.f194, format!("{tag}194"))
        .set(f.f195, format!("{tag}195"))
        .set(f.f196, format!("{tag}196"))
        .set(f.f197, format!("{tag}197"))
        .set(f.f198, format!("{tag}198"))
        .set(f.f199, format!("{tag}199"))
        .set(f.f200, format!("{tag}200"))
        .set(f.f201, format!("{tag}201"))
        .set(f.f202, format!("{tag}202"))
        .set(f.f203, format!("{tag}203"))
        .set(f.f204, format!("{tag}204"))
        .set(f.f205, format!("{tag}205"))
        .set(f.f206, format!("{tag}206"))
        .set(f.f207, format!("{tag}207"))
        .set(f.f208, format!("{tag}208"))
        .set(f.f209, format!("{tag}209"))
        .set(f.f210, format!("{tag}210"))
        .set(f.f211, format!("{tag}211"))
        .set(f.f212, format!("{tag}212"))
        .set(f.f213, format!("{tag}213"))
        .set(f.f214, format!("{tag}214"))
        .set(f.f215, format!("{tag}215"))
        .set(f.f216, format!("{tag}216"))
        .set(f.f217, format!("{tag}217"))
        .set(f.f218, format!("{tag}218"))
        .set(f.f219, format!("{tag}219"))
        .set(f.f220, format!("{tag}220"))
        .set(f.f221, format!("{tag}221"))
        .set(f.f222, format!("{tag}222"))
        .set(f.f223, format!("{tag}223"))
        .set(f.f224, format!("{tag}224"))
        .set(f.f225, format!("{tag}225"))
        .set(f.f226, format!("{tag}226"))
        .set(f.f227, format!("{tag}227"))
        .set(f.f228, format!("{tag}228"))
        .set(f.f229, format!("{tag}229"))
        .set(f.f230, format!("{tag}230"))
        .set(f.f231, format!("{tag}231"))
        .set(f.f232, format!("{tag}232"))
        .set(f.f233, format!("{tag}233"))
        .set(f.f234, format!("{tag}234"))
        .set(f.f235, format!("{tag}235"))
        .set(f.f236, format!("{tag}236"))
        .set(f.f237, format!("{tag}237"))
        .set(f.f238, format!("{tag}238"))
        .set(f.f239, format!("{tag}239"))
        .set(f.f240, format!("{tag}240"))
        .set(f.f241, format!("{tag}241"))
        .set(f.f242, format!("{tag}242"))
        .set(f.f243, format!("{tag}243"))
        .set(f.f244, format!("{tag}244"))
        .set(f.f245, format!("{tag}245"))
        .set(f.f246, format!("{tag}246"))
        .set(f.f247, format!("{tag}247"))
        .set(f.f248, format!("{tag}248"))
        .set(f.f249, format!("{tag}249"))
        .set(f.f250, format!("{tag}250"))
        .set(f.f251, format!("{tag}251"))
        .set(f.f252, format!("{tag}252"))
        .set(f.f253, format!("{tag}253"))
        .set(f.f254, format!("{tag}254"))
        .set(f.f255, format!("{tag}255"))
        .set(f.f256, format!("{tag}256"))
        .set(f.f257, format!("{tag}257"))
        .set(f.f258, format!("{tag}258"))
        .set(f.f259, format!("{tag}259"))
        .set(f.f260, format!("{tag}260"))
        .set(f.f261, format!("{tag}261"))
        .set(f.f262, format!("{tag}262"))
        .set(f.f263, format!("{tag}263"))
        .set(f.f264, format!("{tag}264"))
        .set(f.f265, format!("{tag}265"))
        .set(f.f266, format!("{tag}266"))
        .set(f.f267, format!("{tag}267"))
        .set(f.f268, format!("{tag}268"))
        .set(f.f269, format!("{tag}269"))
        .set(f.f270, format!("{tag}270"))
        .set(f.f271, format!("{tag}271"))
        .set(f.f272, format!("{tag}272"))
        .set(f.f273, format!("{tag}273"))
        .set(f.f274, format!("{tag}274"))
        .set(f.f275, format!("{tag}275"))
        .set(f.f276, format!("{tag}276"))
        .set(f.f277, format!("{tag}277"))
        .set(f.f278, format!("{tag}278"))
        .set(f.f279, format!("{tag}279"))
        .set(f.f280, format!("{tag}280"))
        .set(f.f281, format!("{tag}281"))
        .set(f.f282, format!("{tag}282"))
        .set(f.f283, format!("{tag}283"))
        .set(f.f284, format!("{tag}284"))
        .set(f.f285, format!("{tag}285"))
        .set(f.f286, format!("{tag}286"))
        .set(f.f287, format!("{tag}287"))
        .set(f.f288, format!("{tag}288"))
        .set(f.f289, format!("{tag}289"))
        .set(f.f290, format!("{tag}290"))
        .set(f.f291, format!("{tag}291"))
        .set(f.f292, format!("{tag}292"))
        .set(f.f293, format!("{tag}293"))
        .set(f.f294, format!("{tag}294"))
        .set(f.f295, format!("{tag}295"))
        .set(f.f296, format!("{tag}296"))
        .set(f.f297, format!("{tag}297"))
        .set(f.f298, format!("{tag}298"))
        .set(f.f299, format!("{tag}299"))
}

fn definition() -> Result<TableDefinition, Box<dyn std::error::Error>> {
    Ok(TableDefinition::from_schema(Wides::schema()?)?)
}

/// Every non-key attribute of a record's item, set, as one `UpdateItem` would write them.
fn set_every_attribute<E: Entity + Serialize>(
    record: &E,
) -> Result<Update, Box<dyn std::error::Error>> {
    let item = record.to_item()?;
    Ok(item
        .iter()
        .filter(|(name, _)| !["hashKey", "rangeKey"].contains(&name.as_str()))
        .fold(Update::new(), |u, (name, value)| {
            u.set(name.clone(), value.clone())
        }))
}

async fn wide_versioned<S: Store>(store: &S) -> TestResult {
    for (id, created) in [("w1", 500), ("w2", 1_500)] {
        wide(id, created).create(store).await?;
    }

    // one UpdateItem that sets every attribute is over the 4 KB limit: both stores refuse it
    let mut expected = Wide::get(store, "w1").await?.ok_or("w1 missing")?;
    stamp_wide(&mut expected, "m");
    let refused = store
        .update_item(
            &key_of(&expected)?,
            &set_every_attribute(&expected)?,
            entity_manager::store::Expect::Present,
            ReturnValues::None,
        )
        .await;
    let detail = refused
        .as_ref()
        .err()
        .and_then(|e| e.expression_too_large().copied());
    assert_eq!(
        detail.map(|d| (d.expression, d.limit)),
        Some((ExpressionKind::Update, ExpressionLimit::Length)),
        "{refused:?}"
    );
    assert!(detail.is_some_and(|d| d.size > d.max()));

    // modify changing all 300 fields: the whole record is put, guarded by the version
    let modified = Wide::modify(store, "w1", |w| stamp_wide(w, "m"))
        .await?
        .ok_or("w1 missing")?;
    expected.version = 2;
    assert_eq!(modified, expected);
    assert_stored(store, &modified).await?;
    assert_eq!(Wide::get(store, "w1").await?.as_ref(), Some(&modified));

    // a typed update setting all 300 fields (a blind update otherwise): read, then put
    let updated = Wide::update(store, "w2", set_every_wide("u"))
        .await?
        .ok_or("w2 missing")?;
    assert_eq!(
        (
            updated.f000.as_str(),
            updated.f299.as_str(),
            updated.version
        ),
        ("u000", "u299", 2)
    );
    assert_stored(store, &updated).await?;

    // a stale version: a typed conflict, nothing written
    let stale = Wide::update(store, "w2", set_every_wide("s").if_version(1_u64)).await;
    assert!(
        matches!(&stale, Err(Error::VersionConflict { expected, stored, .. })
            if expected == "1" && stored.as_deref() == Some("2")),
        "{stale:?}"
    );
    // a failed condition: typed, nothing written
    let f = Wide::FIELDS;
    let refused = Wide::update(store, "w2", set_every_wide("c").when(f.f000.eq("nope"))).await;
    assert!(
        matches!(refused, Err(Error::ConditionFailed { .. })),
        "{refused:?}"
    );
    assert_stored(store, &updated).await?;
    assert_eq!(Wide::get(store, "w2").await?.as_ref(), Some(&updated));

    // a missing record: nothing
    assert_eq!(
        Wide::update(store, "nobody", set_every_wide("x")).await?,
        None
    );
    assert_eq!(
        Wide::modify(store, "nobody", |w| stamp_wide(w, "x")).await?,
        None
    );
    Ok(())
}

/// Eight writers stamp every field of one wide record at once, each retrying on a conflict:
/// no stamp is lost (each field's text grows once per writer).
async fn concurrent_wide_writers<S: Store + 'static>(store: std::sync::Arc<S>) -> TestResult {
    wide("hot", 10).create(&*store).await?;
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let store = std::sync::Arc::clone(&store);
            tokio::spawn(async move {
                loop {
                    match Wide::modify(&*store, "hot", |w| stamp_wide(w, "x")).await {
                        Ok(_) => return Ok(()),
                        Err(Error::Conflict { .. }) => tokio::task::yield_now().await,
                        Err(e) => return Err(e),
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.await??;
    }
    let hot = Wide::get(&*store, "hot").await?.ok_or("hot missing")?;
    // one stamp per writer, and the version counts the writes independently
    assert_eq!(hot.version, 1 + 8);
    let text = "x".repeat(8);
    assert_eq!(hot.f000, text);
    assert_eq!(hot.f299, text);
    assert_stored(&*store, &hot).await?;
    Ok(())
}

async fn wide_unversioned<S: Store>(store: &S) -> TestResult {
    let original = bare("b1");
    original.create(store).await?;
    let stored = Bare::get(store, "b1").await?.ok_or("b1 missing")?;

    // without a version field the read-modify-write would need a condition on all 300
    // attributes: refused before any write, saying to add a version field
    let refused = Bare::modify(store, "b1", |b| stamp_bare(b, "m")).await;
    let Err(Error::Store { source, .. }) = &refused else {
        return Err(format!("expected a store error, got {refused:?}").into());
    };
    let detail = source
        .expression_too_large()
        .ok_or("no expression detail")?;
    assert_eq!(detail.expression, ExpressionKind::Condition);
    assert!(detail.size > detail.max());
    assert!(source.to_string().contains("version field"), "{source}");

    let refused = Bare::update(store, "b1", set_every_bare("u")).await;
    assert!(
        matches!(&refused, Err(Error::Store { source, .. }) if source.expression_too_large().is_some()),
        "{refused:?}"
    );
    // nothing was written
    assert_eq!(Bare::get(store, "b1").await?.as_ref(), Some(&stored));
    assert_stored(store, &stored).await?;
    Ok(())
}

#[tokio::test]
async fn wide_versioned_records_are_put_whole_on_memory() -> TestResult {
    Box::pin(wide_versioned(&MemoryStore::new(definition()?))).await
}

#[tokio::test]
async fn wide_versioned_records_are_put_whole_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("wide", definition()?).await? else {
        return Ok(());
    };
    Box::pin(wide_versioned(&store)).await
}

#[tokio::test]
async fn concurrent_wide_writers_lose_nothing_on_memory() -> TestResult {
    Box::pin(concurrent_wide_writers(std::sync::Arc::new(
        MemoryStore::new(definition()?),
    )))
    .await
}

#[tokio::test]
async fn concurrent_wide_writers_lose_nothing_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("wide-hot", definition()?).await? else {
        return Ok(());
    };
    Box::pin(concurrent_wide_writers(std::sync::Arc::new(store))).await
}

#[tokio::test]
async fn wide_unversioned_records_are_refused_before_any_write_on_memory() -> TestResult {
    Box::pin(wide_unversioned(&MemoryStore::new(definition()?))).await
}

#[tokio::test]
async fn wide_unversioned_records_are_refused_before_any_write_on_dynamodb() -> TestResult {
    let Some(store) = store_support::dynamo_store("wide-bare", definition()?).await? else {
        return Ok(());
    };
    Box::pin(wide_unversioned(&store)).await
}
