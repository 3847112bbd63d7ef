//! The seed docs' User service, declared with the derives: `user_service!(User, Email,
//! Table)` declares the two entities stored in `Table` (which the caller declares with
//! `#[derive(Table)]` and `entities(User, Email)`).

/// Declares the User service entities `$user` and `$email`, stored in `$table`.
macro_rules! user_service {
    ($user:ident, $email:ident, $table:ident) => {
        /// A user of the User service.
        #[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
        #[serde(rename_all = "camelCase")]
        #[entity(table = $table, token = "user", unique = user_id, timestamp = created)]
        #[shard_bumps(bumps = [
            bump(timestamp = 1_726_880_933_000, char_bits = 2, chars = 1),
            bump(timestamp = 1_735_689_600_000, char_bits = 3, chars = 2),
        ])]
        #[generated(name = user_beneficiary_hash_key, components = [beneficiary_id], sharded)]
        #[generated(name = first_name_range_key, components = [first_name_canonical, last_name_canonical, created])]
        #[generated(name = last_name_range_key, components = [last_name_canonical, first_name_canonical, created])]
        #[index(name = "created", range = created)]
        #[index(name = "firstName", range = first_name_range_key)]
        #[index(name = "lastName", range = last_name_range_key)]
        #[index(name = "phone", range = phone)]
        #[index(name = "updated", range = updated)]
        #[index(name = "userBeneficiaryCreated", hash = user_beneficiary_hash_key, range = created, project = [some_property, some_other_property])]
        #[index(name = "userBeneficiaryFirstName", hash = user_beneficiary_hash_key, range = first_name_range_key, keys_only)]
        #[index(name = "userBeneficiaryLastName", hash = user_beneficiary_hash_key, range = last_name_range_key)]
        #[index(name = "userBeneficiaryPhone", hash = user_beneficiary_hash_key, range = phone)]
        #[index(name = "userBeneficiaryUpdated", hash = user_beneficiary_hash_key, range = updated)]
        pub(crate) struct $user {
            #[transcode("string")]
            pub(crate) user_id: String,
            #[transcode("timestamp")]
            pub(crate) created: u64,
            #[transcode("timestamp")]
            pub(crate) updated: u64,
            #[transcode("string")]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub(crate) beneficiary_id: Option<String>,
            pub(crate) first_name: String,
            #[transcode("string")]
            pub(crate) first_name_canonical: String,
            pub(crate) last_name: String,
            #[transcode("string")]
            pub(crate) last_name_canonical: String,
            #[transcode("string")]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub(crate) phone: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub(crate) some_property: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub(crate) some_other_property: Option<i64>,
        }

        /// An email address of a user.
        #[derive(Entity, Serialize, Deserialize, Clone, Debug, PartialEq)]
        #[serde(rename_all = "camelCase")]
        #[entity(table = $table, token = "email", unique = email, timestamp = created)]
        #[shard_bumps(bump(timestamp = 1_730_000_000_000, char_bits = 2, chars = 1))]
        #[generated(name = user_hash_key, components = [user_id], sharded)]
        #[index(name = "created", range = created)]
        #[index(name = "userCreated", hash = user_hash_key, range = created)]
        pub(crate) struct $email {
            #[transcode("string")]
            pub(crate) email: String,
            #[transcode("timestamp")]
            pub(crate) created: u64,
            #[transcode("string")]
            pub(crate) user_id: String,
        }
    };
}
