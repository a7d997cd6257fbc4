//! The requests behind the clients' typed methods that take arguments
//! (`call_tool`, `get_prompt`), so that both adapters take them as one type, a JSON
//! [`Value`], and refuse the same values the same way.

use mcp_proto::client::{ApiMisuse, CallRequest};
use serde_json::{Map, Value};

/// The arguments of a tool call or a prompt: an object as it is, `null` as none (an
/// empty object); anything else is refused with [`ApiMisuse::ArgumentsNotObject`],
/// before anything is sent.
///
/// ```
/// use mcp_io::request::arguments;
/// use mcp_proto::client::ApiMisuse;
/// use serde_json::json;
///
/// assert_eq!(arguments(json!({"a": 1})).unwrap()["a"], 1);
/// assert!(arguments(json!(null)).unwrap().is_empty());
/// assert_eq!(arguments(json!([1])), Err(ApiMisuse::ArgumentsNotObject("an array")));
/// ```
///
/// # Errors
/// [`ApiMisuse::ArgumentsNotObject`] for a string, number, boolean or array.
pub fn arguments(value: Value) -> Result<Map<String, Value>, ApiMisuse> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        Value::Bool(_) => Err(ApiMisuse::ArgumentsNotObject("a boolean")),
        Value::Number(_) => Err(ApiMisuse::ArgumentsNotObject("a number")),
        Value::String(_) => Err(ApiMisuse::ArgumentsNotObject("a string")),
        Value::Array(_) => Err(ApiMisuse::ArgumentsNotObject("an array")),
    }
}

/// `tools/call` of `name` with `arguments` (see [`arguments`]; `null` is sent as `{}`).
///
/// # Errors
/// As [`arguments`].
pub fn call_tool(name: &str, arguments: Value) -> Result<CallRequest, ApiMisuse> {
    let arguments = self::arguments(arguments)?;
    Ok(CallRequest::call_tool(name, Value::Object(arguments)))
}

/// `prompts/get` of `name` with `arguments` (see [`arguments`]; none are sent for `null`
/// or `{}`).
///
/// # Errors
/// As [`arguments`].
pub fn get_prompt(name: &str, arguments: Value) -> Result<CallRequest, ApiMisuse> {
    Ok(CallRequest::get_prompt(name, self::arguments(arguments)?))
}

/// `completion/complete` (see [`CallRequest::complete`]) with `context` an object of
/// arguments already chosen, or `null` for none.
///
/// # Errors
/// As [`arguments`], for `context`.
pub fn complete(
    reference: &mcp_proto::model::CompletionRef,
    argument: &str,
    value: &str,
    context: Value,
) -> Result<CallRequest, ApiMisuse> {
    let context = self::arguments(context)?;
    Ok(CallRequest::complete(reference, argument, value, context))
}

/// Writes the typed request methods of a client facade (`list_tools`, `list_resources`,
/// `list_resource_templates`, `list_prompts`, `call_tool`, `read_resource`, `get_prompt`,
/// `complete`, `ping`, `subscribe_resource`, `unsubscribe_resource`, and the Skills
/// extension's `list_skills`, `skill_entry`, `load_skill`, `read_skill_file`,
/// `read_directory`)
/// on top of its `request` method, so that both adapters have one definition of them
/// and their documentation.
///
/// `typed_requests!(async &)` writes `async fn …(&self)` methods that `.await` the
/// request; `typed_requests!(blocking &mut)` writes `fn …(&mut self)` methods and
/// `typed_requests!(blocking &)` `fn …(&self)` ones (a handle shared between threads). Either way
/// the facade supplies `request(…, CallRequest) -> Result<CallOutput, Error>`, `async` or
/// not to match.
#[macro_export]
#[doc(hidden)]
macro_rules! typed_requests {
    (async &) => {
        $crate::typed_requests!(@emit [async] [.await] []);
    };
    (blocking &mut) => {
        $crate::typed_requests!(@emit [] [] [mut]);
    };
    (blocking &) => {
        $crate::typed_requests!(@emit [] [] []);
    };
    (@emit [$($async:tt)*] [$($await:tt)*] [$($mut:tt)*]) => {
        /// `tools/list`, every page.
        ///
        /// # Errors
        /// As [`Self::request`], and [`Error::Call`](crate::Error::Call) when a tool does
        /// not parse.
        pub $($async)* fn list_tools(
            &$($mut)* self,
        ) -> ::core::result::Result<::std::vec::Vec<$crate::mcp_proto::model::Tool>, $crate::Error>
        {
            let request = $crate::mcp_proto::client::CallRequest::list_tools();
            Ok(self.request(request)$($await)*?.tools()?)
        }

        /// `resources/list`, every page.
        ///
        /// # Errors
        /// As [`Self::request`], and [`Error::Call`](crate::Error::Call) when a resource
        /// does not parse.
        pub $($async)* fn list_resources(
            &$($mut)* self,
        ) -> ::core::result::Result<
            ::std::vec::Vec<$crate::mcp_proto::model::Resource>,
            $crate::Error,
        > {
            let request = $crate::mcp_proto::client::CallRequest::list_resources();
            Ok(self.request(request)$($await)*?.resources()?)
        }

        /// `tasks/list` (2025-11-25), every page. The 2026-07-28 tasks extension has no
        /// listing: there it fails with
        /// [`CallError::NotInVersion`](crate::mcp_proto::client::CallError::NotInVersion)
        /// and nothing is sent.
        ///
        /// # Errors
        /// As [`Self::request`], and [`Error::Call`](crate::Error::Call) when a task does
        /// not parse.
        pub $($async)* fn list_tasks(
            &$($mut)* self,
        ) -> ::core::result::Result<::std::vec::Vec<$crate::mcp_proto::client::Task>, $crate::Error>
        {
            let request = $crate::mcp_proto::client::CallRequest::list_tasks();
            Ok(self.request(request)$($await)*?.tasks()?)
        }

        /// `resources/templates/list`, every page.
        ///
        /// # Errors
        /// As [`Self::request`], and [`Error::Call`](crate::Error::Call) when a template
        /// does not parse.
        pub $($async)* fn list_resource_templates(
            &$($mut)* self,
        ) -> ::core::result::Result<
            ::std::vec::Vec<$crate::mcp_proto::model::ResourceTemplate>,
            $crate::Error,
        > {
            let request = $crate::mcp_proto::client::CallRequest::list_resource_templates();
            Ok(self.request(request)$($await)*?.items_as()?)
        }

        /// `completion/complete`: suggested values for `argument` of `reference` (a
        /// prompt or a resource template) that start from `value`; `context` holds the
        /// arguments already chosen (`null` or `{}` for none), as strings.
        ///
        /// # Errors
        /// As [`Self::request`]; [`Error::Misuse`](crate::Error::Misuse) for a context
        /// that is not an object (nothing is sent), and [`Error::Call`](crate::Error::Call)
        /// when the result has no `completion`.
        pub $($async)* fn complete(
            &$($mut)* self,
            reference: &$crate::mcp_proto::model::CompletionRef,
            argument: &str,
            value: &str,
            context: $crate::api::serde_json::Value,
        ) -> ::core::result::Result<$crate::mcp_proto::model::Completion, $crate::Error> {
            let request = $crate::request::complete(reference, argument, value, context)?;
            Ok(self.request(request)$($await)*?.completion()?)
        }

        /// `ping` (2025-06-18 and 2025-11-25): `Ok` once the server answered. The
        /// 2026-07-28 protocol has no ping; there it fails with
        /// [`CallError::NotInVersion`](crate::mcp_proto::client::CallError::NotInVersion)
        /// and nothing is sent.
        ///
        /// # Errors
        /// As [`Self::request`].
        pub $($async)* fn ping(&$($mut)* self) -> ::core::result::Result<(), $crate::Error> {
            let request = $crate::mcp_proto::client::CallRequest::ping();
            self.request(request)$($await)*?;
            Ok(())
        }

        /// `resources/subscribe` (2025-06-18 and 2025-11-25): the server then sends
        /// `notifications/resources/updated` for `uri`, read with
        /// [`Change::from_notification`](crate::mcp_proto::client::Change::from_notification).
        /// In 2026-07-28 it fails with
        /// [`CallError::NotInVersion`](crate::mcp_proto::client::CallError::NotInVersion)
        /// and nothing is sent.
        ///
        /// # Errors
        /// As [`Self::request`].
        pub $($async)* fn subscribe_resource(
            &$($mut)* self,
            uri: &str,
        ) -> ::core::result::Result<(), $crate::Error> {
            let request = $crate::mcp_proto::client::CallRequest::subscribe_resource(uri);
            self.request(request)$($await)*?;
            Ok(())
        }

        /// `resources/unsubscribe` (2025-06-18 and 2025-11-25); as
        /// [`Self::subscribe_resource`] in 2026-07-28.
        ///
        /// # Errors
        /// As [`Self::request`].
        pub $($async)* fn unsubscribe_resource(
            &$($mut)* self,
            uri: &str,
        ) -> ::core::result::Result<(), $crate::Error> {
            let request = $crate::mcp_proto::client::CallRequest::unsubscribe_resource(uri);
            self.request(request)$($await)*?;
            Ok(())
        }

        /// `skills/list` (the Skills extension), every page, each entry checked: the
        /// valid entries, and apart the ones that failed a check (never to be loaded).
        /// Nothing but the listing is fetched.
        ///
        /// # Errors
        /// As [`Self::request`];
        /// [`CallError::NotDeclared`](crate::mcp_proto::client::CallError::NotDeclared)
        /// when the server did not declare the extension (nothing is sent).
        pub $($async)* fn list_skills(
            &$($mut)* self,
        ) -> ::core::result::Result<$crate::mcp_proto::skills::Listing, $crate::Error> {
            let request = $crate::mcp_proto::client::CallRequest::list_skills();
            let output = self.request(request)$($await)*?;
            Ok($crate::mcp_proto::skills::Listing::from_output(
                &output,
                &$crate::mcp_proto::skills::SkillLimits::default(),
            ))
        }

        /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`, checked.
        ///
        /// # Errors
        /// As [`Self::list_skills`]; [`Error::Skill`](crate::Error::Skill) for an invalid
        /// entry or one for another skill.
        pub $($async)* fn skill_entry(
            &$($mut)* self,
            uri: &str,
        ) -> ::core::result::Result<$crate::mcp_proto::skills::Skill, $crate::Error> {
            let request = $crate::mcp_proto::client::CallRequest::skill_entry(uri);
            let output = self.request(request)$($await)*?;
            Ok($crate::mcp_proto::skills::Skill::from_get_output(
                &output,
                uri,
                &$crate::mcp_proto::skills::SkillLimits::default(),
            )?)
        }

        /// Loads a skill (an entry from [`Self::list_skills`], or the URI of its
        /// `SKILL.md`, whose entry is then fetched with `skills/get`): reads its
        /// `SKILL.md` and checks its size, digest and frontmatter against the entry.
        /// No other file is fetched. Dynamic skills (no digests) are refused.
        ///
        /// # Errors
        /// As [`Self::request`]; [`Error::Skill`](crate::Error::Skill) naming what failed
        /// a check.
        pub $($async)* fn load_skill(
            &$($mut)* self,
            target: impl ::core::convert::Into<$crate::mcp_proto::skills::SkillTarget>,
        ) -> ::core::result::Result<$crate::mcp_proto::skills::LoadedSkill, $crate::Error> {
            let mut load = $crate::mcp_proto::skills::SkillLoad::new(target);
            loop {
                load.check()?;
                let Some(request) = load.poll_request() else {
                    return Err($crate::mcp_proto::skills::SkillError::Content {
                        uri: ::std::string::String::new(),
                        problem: "the load has no request to make".into(),
                    }
                    .into());
                };
                let output = self.request(request)$($await)*?;
                if let Some(loaded) = load.handle_output(&output)? {
                    return Ok(loaded);
                }
            }
        }

        /// Reads one file of a loaded skill (`path` relative to the skill's root, or its
        /// URI) and returns its bytes once their size and digest match the entry the
        /// skill was loaded from. A file the entry does not list is refused before
        /// anything is sent.
        ///
        /// # Errors
        /// As [`Self::request`]; [`Error::Skill`](crate::Error::Skill) naming what failed.
        pub $($async)* fn read_skill_file(
            &$($mut)* self,
            skill: &$crate::mcp_proto::skills::LoadedSkill,
            path: &str,
        ) -> ::core::result::Result<::std::vec::Vec<u8>, $crate::Error> {
            let read = skill.read_file(path)?;
            let output = self.request(read.request())$($await)*?;
            Ok(read.handle_output(&output)?)
        }

        /// `resources/directory/read` (Skills extension), every page: the direct
        /// children of the directory resource at `uri` (subdirectories have the MIME type
        /// `inode/directory`). A live view: it does not extend what a loaded skill may
        /// read.
        ///
        /// # Errors
        /// As [`Self::request`];
        /// [`CallError::NotDeclared`](crate::mcp_proto::client::CallError::NotDeclared)
        /// unless the server declared `directoryRead: true` (nothing is sent).
        pub $($async)* fn read_directory(
            &$($mut)* self,
            uri: &str,
        ) -> ::core::result::Result<
            ::std::vec::Vec<$crate::mcp_proto::model::Resource>,
            $crate::Error,
        > {
            let request = $crate::mcp_proto::client::CallRequest::read_directory(uri);
            Ok(self.request(request)$($await)*?.resources()?)
        }

        /// `prompts/list`, every page.
        ///
        /// # Errors
        /// As [`Self::request`], and [`Error::Call`](crate::Error::Call) when a prompt
        /// does not parse.
        pub $($async)* fn list_prompts(
            &$($mut)* self,
        ) -> ::core::result::Result<
            ::std::vec::Vec<$crate::mcp_proto::model::Prompt>,
            $crate::Error,
        > {
            let request = $crate::mcp_proto::client::CallRequest::list_prompts();
            Ok(self.request(request)$($await)*?.prompts()?)
        }

        /// `tools/call` with `arguments`, a JSON object (or `null` for none). A tool that
        /// failed is a successful call whose result has `is_error: Some(true)`.
        ///
        /// # Errors
        /// As [`Self::request`]; [`Error::Misuse`](crate::Error::Misuse) for arguments
        /// that are not an object (nothing is sent), and
        /// [`Error::Call`](crate::Error::Call) when the result is not a `CallToolResult`.
        pub $($async)* fn call_tool(
            &$($mut)* self,
            name: &str,
            arguments: $crate::api::serde_json::Value,
        ) -> ::core::result::Result<$crate::mcp_proto::model::CallToolResult, $crate::Error> {
            let request = $crate::request::call_tool(name, arguments)?;
            Ok(self.request(request)$($await)*?.tool_result()?)
        }

        /// `resources/read`: the `ReadResourceResult` as JSON.
        ///
        /// # Errors
        /// As [`Self::request`].
        pub $($async)* fn read_resource(
            &$($mut)* self,
            uri: &str,
        ) -> ::core::result::Result<$crate::api::serde_json::Value, $crate::Error> {
            let request = $crate::mcp_proto::client::CallRequest::read_resource(uri);
            Ok(self.request(request)$($await)*?.result_as()?)
        }

        /// `logging/setLevel`: the server's log messages at `level` and above, for the
        /// session (legacy era); in 2026-07-28, nothing is sent and `level` becomes the
        /// per-request level of every later request (see
        /// [`CallRequest::set_log_level`](crate::mcp_proto::client::CallRequest::set_log_level)).
        /// Deliver the messages with [`Options::on_log`](crate::Options::on_log()).
        ///
        /// # Errors
        /// As [`Self::request`].
        pub $($async)* fn set_log_level(
            &$($mut)* self,
            level: $crate::mcp_proto::client::LogLevel,
        ) -> ::core::result::Result<(), $crate::Error> {
            let request = $crate::mcp_proto::client::CallRequest::set_log_level(level);
            self.request(request)$($await)*?;
            Ok(())
        }

        /// `prompts/get` with `arguments`, a JSON object (or `null` for none): the
        /// `GetPromptResult` as JSON.
        ///
        /// # Errors
        /// As [`Self::request`]; [`Error::Misuse`](crate::Error::Misuse) for arguments
        /// that are not an object (nothing is sent).
        pub $($async)* fn get_prompt(
            &$($mut)* self,
            name: &str,
            arguments: $crate::api::serde_json::Value,
        ) -> ::core::result::Result<$crate::api::serde_json::Value, $crate::Error> {
            let request = $crate::request::get_prompt(name, arguments)?;
            Ok(self.request(request)$($await)*?.result_as()?)
        }
    };
}
