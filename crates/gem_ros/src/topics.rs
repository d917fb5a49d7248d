//! A node's ROS interface, declared once per name in a table.
//!
//! Each topic, service and action a node uses is a `const` [`Decl`]: the name as the node
//! resolves it (relative names follow its namespace and remappings, `~` ones are private,
//! `/` ones absolute), what the node does on it ([`Role`]: publishes, with queue size and
//! latching; subscribes; serves or calls a service; serves or uses an action), and a
//! one-line description. A `Decl` is typed by its message, service or action type, and the
//! type name in the documentation is read from that generated type, never written by hand.
//! The node's wiring uses the declarations ([`Decl::publish`], [`Decl::name`]), its
//! [`Entry`] table drives the documentation's interface table ([`markdown_table`]), and a
//! test fails when the two drift apart ([`check_docs`]).

use ros1_protocols::RosError;
use std::marker::PhantomData;

/// What a node does on a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Publishes on the topic.
    Publishes {
        /// Outgoing queue size.
        queue: usize,
        /// The last message is kept for subscribers that connect later.
        latched: bool,
    },
    /// Subscribes to the topic.
    Subscribes,
    /// Advertises the service.
    Serves,
    /// Calls the service.
    Calls,
    /// Serves the action (its goal and cancel topics in, status, feedback and result out).
    ActionServer,
    /// Uses the action (the reverse).
    ActionClient,
}

impl Role {
    fn text(self) -> &'static str {
        match self {
            Role::Publishes { latched: false, .. } => "publishes",
            Role::Publishes { latched: true, .. } => "publishes (latched)",
            Role::Subscribes => "subscribes",
            Role::Serves => "serves",
            Role::Calls => "calls",
            Role::ActionServer => "action server",
            Role::ActionClient => "action client",
        }
    }
}

/// Where a row's type name comes from.
#[derive(Clone, Copy, Debug)]
enum TypeName {
    /// A generated message or service type's `msg_type()`.
    Of(fn() -> String),
    /// A generated `…Action` message's `msg_type()`, without the `Action`.
    ActionOf(fn() -> String),
    /// Whatever the configuration names (a monitor's topics).
    Any,
}

/// One row of a node's interface table (untyped, so one table holds every kind).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The name as the node resolves it; for a [`Entry::configured`] row, what it stands for.
    pub name: &'static str,
    /// What the node does on it.
    pub role: Role,
    /// One-line description for the documentation table.
    pub doc: &'static str,
    ros_type: TypeName,
}

impl Entry {
    /// A row for names only known at run time (`what` says where they come from), of any
    /// type.
    pub const fn configured(what: &'static str, role: Role, doc: &'static str) -> Entry {
        Entry {
            name: what,
            role,
            doc,
            ros_type: TypeName::Any,
        }
    }

    /// The same row with another description: what a node-independent declaration
    /// (`crate::processed`) means for this node.
    pub const fn with_doc(self, doc: &'static str) -> Entry {
        Entry { doc, ..self }
    }

    /// The ROS type name (`pkg/Type`; an action's without `Action`); `None` for any type.
    pub fn ros_type(&self) -> Option<String> {
        match self.ros_type {
            TypeName::Of(f) => Some(f()),
            TypeName::ActionOf(f) => {
                let full = f();
                Some(full.strip_suffix("Action").unwrap_or(&full).to_owned())
            }
            TypeName::Any => None,
        }
    }
}

/// One name a node uses, typed by its message (topics), service or `…Action` message
/// (actions) type `T`.
#[derive(Debug)]
pub struct Decl<T> {
    entry: Entry,
    ty: PhantomData<fn() -> T>,
}

// Not derived: a declaration is copyable whatever `T` is.
impl<T> Clone for Decl<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Decl<T> {}

impl<T> Decl<T> {
    const fn new(name: &'static str, role: Role, ros_type: TypeName, doc: &'static str) -> Self {
        Decl {
            entry: Entry {
                name,
                role,
                doc,
                ros_type,
            },
            ty: PhantomData,
        }
    }

    /// The name as the node passes it to ROS.
    pub const fn name(&self) -> &'static str {
        self.entry.name
    }

    /// The row of the node's interface table.
    pub const fn entry(&self) -> Entry {
        self.entry
    }
}

impl<T: rosrust::Message> Decl<T> {
    /// A topic the node publishes, `queue` messages deep.
    pub const fn publishes(name: &'static str, queue: usize, doc: &'static str) -> Self {
        let role = Role::Publishes {
            queue,
            latched: false,
        };
        Self::new(name, role, TypeName::Of(T::msg_type), doc)
    }

    /// A topic the node publishes latched: a subscriber that connects later gets the last
    /// message.
    pub const fn latched(name: &'static str, queue: usize, doc: &'static str) -> Self {
        let role = Role::Publishes {
            queue,
            latched: true,
        };
        Self::new(name, role, TypeName::Of(T::msg_type), doc)
    }

    /// A topic the node subscribes to.
    pub const fn subscribes(name: &'static str, doc: &'static str) -> Self {
        Self::new(name, Role::Subscribes, TypeName::Of(T::msg_type), doc)
    }

    /// A service the node advertises (`T`: the service type).
    pub const fn serves(name: &'static str, doc: &'static str) -> Self {
        Self::new(name, Role::Serves, TypeName::Of(T::msg_type), doc)
    }

    /// A service the node calls (`T`: the service type).
    pub const fn calls(name: &'static str, doc: &'static str) -> Self {
        Self::new(name, Role::Calls, TypeName::Of(T::msg_type), doc)
    }

    /// An action the node serves (`T`: the generated `…Action` message).
    pub const fn action_server(name: &'static str, doc: &'static str) -> Self {
        Self::new(
            name,
            Role::ActionServer,
            TypeName::ActionOf(T::msg_type),
            doc,
        )
    }

    /// An action the node sends goals to (`T`: the generated `…Action` message).
    pub const fn action_client(name: &'static str, doc: &'static str) -> Self {
        Self::new(
            name,
            Role::ActionClient,
            TypeName::ActionOf(T::msg_type),
            doc,
        )
    }

    /// Advertises the topic with the declared queue size and latching.
    pub fn publish(&self) -> Result<ros1_protocols::runtime::Publisher<T>, RosError> {
        let Role::Publishes { queue, latched } = self.entry.role else {
            return Err(RosError::new(format!(
                "{} is not declared as published",
                self.entry.name
            )));
        };
        ros1_protocols::this_node::advertise(self.entry.name, queue, latched)
    }
}

/// The documentation's interface table for `entries`, one row per name.
pub fn markdown_table(entries: &[Entry]) -> String {
    let columns = ["direction", "name", "type", "meaning"];
    crate::docs::markdown_table(&columns, entries, |e| {
        let (name, ros_type) = match e.ros_type() {
            Some(t) => (format!("`{}`", e.name), format!("`{t}`")),
            None => (e.name.to_owned(), "any".to_owned()),
        };
        vec![e.role.text().to_owned(), name, ros_type, e.doc.to_owned()]
    })
}

/// Checks that the documentation page `page` (its text: `doc`) contains the interface
/// table of `entries` verbatim; the error shows the table it must contain.
pub fn check_docs(entries: &[Entry], page: &str, doc: &str) -> Result<(), String> {
    crate::docs::check_page("interface", &markdown_table(entries), page, doc)
}

/// Declares a node's interface once: one `const` [`Decl`] per name the node uses, and the
/// table of them all (followed by any entries declared elsewhere):
///
/// ```
/// use gem_msgs::std_msgs::Header;
/// use gem_ros::topics::Decl;
/// gem_ros::interface_table! {
///     /// Every name the node uses.
///     pub const INTERFACE = [
///         /// Its output.
///         OUT: Header = Decl::publishes("out", 10, "the last header");
///     ];
/// }
/// assert_eq!(INTERFACE.len(), 1);
/// assert_eq!(OUT.name(), "out");
/// ```
#[macro_export]
macro_rules! interface_table {
    ($(#[$meta:meta])* $vis:vis const $table:ident = [$($(#[$m:meta])* $name:ident: $ty:ty = $decl:expr;)*] $(+ [$($extra:expr),* $(,)?])?;) => {
        $($(#[$m])* pub const $name: $crate::topics::Decl<$ty> = $decl;)*
        $(#[$meta])*
        $vis const $table: &[$crate::topics::Entry] = &[$($name.entry(),)* $($($extra),*)?];
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use gem_msgs::gazebo_msgs::GetModelState;
    use gem_msgs::gem_controller_action::NavigateWaypointsAction;
    use gem_msgs::std_msgs::Header;

    const OUT: Decl<Header> = Decl::latched("~out", 1, "the last header");
    const POSE: Decl<GetModelState> = Decl::calls("gazebo/get_model_state", "the pose");
    const NAV: Decl<NavigateWaypointsAction> = Decl::action_server("navigate_waypoints", "drives");

    #[test]
    fn table_rows_name_the_generated_types() {
        let table = markdown_table(&[
            OUT.entry(),
            POSE.entry(),
            NAV.entry(),
            Entry::configured("every topic", Role::Subscribes, "watched"),
        ]);
        assert!(table
            .contains("| publishes (latched) | `~out` | `std_msgs/Header` | the last header |"));
        assert!(table.contains(
            "| calls | `gazebo/get_model_state` | `gazebo_msgs/GetModelState` | the pose |"
        ));
        assert!(table.contains(
            "| action server | `navigate_waypoints` | `gem_controller_action/NavigateWaypoints` | drives |"
        ));
        assert!(table.contains("| subscribes | every topic | any | watched |"));
        assert_eq!(table.lines().count(), 6);
    }

    #[test]
    fn a_declaration_not_published_cannot_be_advertised() {
        const IN: Decl<Header> = Decl::subscribes("in", "");
        let err = IN.publish().err().expect("refused").to_string();
        assert!(err.contains("in is not declared as published"), "{err}");
    }
}
