//! Every interleaving the original got wrong, one test each, from named states.

use super::*;

fn path(n: usize) -> Arc<[Pose]> {
    (0..n).map(|i| Pose::new(i as f64, 0.0, 0.0)).collect()
}

/// No task, system fine.
fn idle() -> Planner {
    let mut p = Planner::default();
    assert!(p.step(Event::SystemError(false)).is_empty());
    p
}

/// Running goal 1 of a 10-point task, feedback at 4.
fn running() -> Planner {
    let mut p = idle();
    p.step(Event::Serve(path(10)));
    p.step(feedback(1, 4));
    p
}

/// ERROR came while running: paused at 4, cancel of goal 1 in flight.
fn paused_cancelling() -> Planner {
    let mut p = running();
    assert_eq!(
        p.step(Event::SystemError(true)),
        vec![Effect::CancelGoal { goal: 1 }]
    );
    p
}

fn done(goal: GoalSeq, outcome: GoalOutcome) -> Event {
    Event::Done { goal, outcome }
}

fn feedback(goal: GoalSeq, target_index: usize) -> Event {
    Event::Feedback { goal, target_index }
}

/// Paused to resume at `index`, with no cancel in flight.
fn paused_at(p: &Planner, index: usize) -> bool {
    matches!(p.task(), Task::Paused { resume_index, cancelling: None, .. } if *resume_index == index)
}

fn send(goal: GoalSeq, n: usize, start_index: usize) -> Effect {
    Effect::SendGoal {
        goal,
        waypoints: path(n),
        start_index,
    }
}

#[test]
fn start_before_any_system_state_waits() {
    let mut p = Planner::default();
    assert!(p.step(Event::Serve(path(5))).is_empty());
    assert_eq!(p.status(), Status::Paused);
    assert_eq!(p.step(Event::SystemError(false)), vec![send(1, 5, 0)]);
    assert_eq!(p.status(), Status::Running);
}

#[test]
fn idle_serve_sends_at_once() {
    let mut p = idle();
    assert_eq!(p.step(Event::Serve(path(5))), vec![send(1, 5, 0)]);
    assert_eq!(p.status(), Status::Running);
}

#[test]
fn running_feedback_moves_the_resume_index() {
    let p = running();
    assert!(matches!(
        p.task(),
        Task::Running {
            last_index: 4,
            goal: 1,
            ..
        }
    ));
}

#[test]
fn running_error_cancels_and_pauses_at_the_feedback_index() {
    let p = paused_cancelling();
    assert_eq!(p.status(), Status::Paused);
    assert!(matches!(
        p.task(),
        Task::Paused {
            resume_index: 4,
            cancelling: Some(1),
            ..
        }
    ));
}

#[test]
fn paused_recovery_resumes_from_the_cached_index_with_a_new_goal() {
    let mut p = paused_cancelling();
    assert_eq!(p.step(Event::SystemError(false)), vec![send(2, 10, 4)]);
    assert!(matches!(
        p.task(),
        Task::Running {
            goal: 2,
            last_index: 4,
            ..
        }
    ));
}

#[test]
fn running_idle_to_running_does_not_cancel_and_resend() {
    // The system goes IDLE→RUNNING because our task started: not an error change.
    let mut p = running();
    assert!(p.step(Event::SystemError(false)).is_empty());
    assert!(matches!(p.task(), Task::Running { goal: 1, .. }));
}

#[test]
fn paused_repeated_error_states_do_nothing() {
    let mut p = paused_cancelling();
    for _ in 0..5 {
        assert!(p.step(Event::SystemError(true)).is_empty());
    }
    assert!(matches!(
        p.task(),
        Task::Paused {
            resume_index: 4,
            ..
        }
    ));
}

#[test]
fn paused_goal_succeeds_while_cancel_in_flight_completes_the_task() {
    let mut p = paused_cancelling();
    assert!(p.step(done(1, GoalOutcome::Succeeded)).is_empty());
    assert_eq!(p.status(), Status::NoTask);
    // And recovery then starts nothing.
    assert!(p.step(Event::SystemError(false)).is_empty());
}

#[test]
fn paused_cancel_acknowledged_keeps_the_task() {
    let mut p = paused_cancelling();
    assert!(p.step(done(1, GoalOutcome::Preempted)).is_empty());
    assert!(paused_at(&p, 4));
}

#[test]
fn paused_serve_while_error_replaces_the_task_paused_at_zero() {
    let mut p = paused_cancelling();
    assert_eq!(
        p.step(Event::Serve(path(7))),
        vec![Effect::CancelGoal { goal: 1 }]
    );
    assert!(matches!(
        p.task(),
        Task::Paused {
            resume_index: 0,
            cancelling: Some(1),
            ..
        }
    ));
    assert_eq!(p.step(Event::SystemError(false)), vec![send(2, 7, 0)]);
}

#[test]
fn idle_serve_while_error_waits_for_recovery() {
    let mut p = idle();
    p.step(Event::SystemError(true));
    assert!(p.step(Event::Serve(path(3))).is_empty());
    assert_eq!(p.status(), Status::Paused);
    assert_eq!(p.step(Event::SystemError(false)), vec![send(1, 3, 0)]);
}

#[test]
fn paused_serve_after_recovery_starts_the_new_task() {
    let mut p = paused_cancelling();
    p.step(done(1, GoalOutcome::Preempted));
    // Another client preempted nothing; the error is still on; now it clears.
    p.step(Event::SystemError(false));
    assert_eq!(p.step(Event::Serve(path(6))), vec![send(3, 6, 0)]);
}

#[test]
fn running_serve_replaces_the_task_and_ignores_the_old_goal_end() {
    let mut p = running();
    assert_eq!(p.step(Event::Serve(path(8))), vec![send(2, 8, 0)]);
    assert!(p.step(done(1, GoalOutcome::Preempted)).is_empty());
    assert!(matches!(p.task(), Task::Running { goal: 2, .. }));
    // Late feedback of the old goal does not move the new one's index.
    p.step(feedback(1, 9));
    assert!(matches!(p.task(), Task::Running { last_index: 0, .. }));
}

#[test]
fn paused_cancel_drops_the_task() {
    let mut p = paused_cancelling();
    assert!(
        p.step(Event::Cancel).is_empty(),
        "the cancel is already in flight"
    );
    assert_eq!(p.status(), Status::NoTask);
    assert!(p.step(Event::SystemError(false)).is_empty());
}

#[test]
fn running_cancel_cancels_the_goal() {
    let mut p = running();
    assert_eq!(p.step(Event::Cancel), vec![Effect::CancelGoal { goal: 1 }]);
    assert_eq!(p.status(), Status::NoTask);
    assert!(p.step(done(1, GoalOutcome::Preempted)).is_empty());
    assert_eq!(p.status(), Status::NoTask);
}

#[test]
fn idle_cancel_does_nothing() {
    let mut p = idle();
    assert!(p.step(Event::Cancel).is_empty());
}

#[test]
fn running_succeeded_aborted_or_rejected_ends_the_task() {
    for outcome in [
        GoalOutcome::Succeeded,
        GoalOutcome::Aborted,
        GoalOutcome::Rejected,
    ] {
        let mut p = running();
        p.step(done(1, outcome));
        assert_eq!(p.status(), Status::NoTask, "{outcome:?}");
    }
}

#[test]
fn running_preempted_by_someone_else_keeps_the_task_paused() {
    let mut p = running();
    p.step(done(1, GoalOutcome::Preempted));
    assert!(paused_at(&p, 4));
}

#[test]
fn running_recalled_keeps_the_task() {
    let mut p = running();
    p.step(done(1, GoalOutcome::Recalled));
    assert_eq!(p.status(), Status::Paused);
}

#[test]
fn running_lost_keeps_the_task_and_resumes_after_an_error_cycle() {
    let mut p = running();
    p.step(done(1, GoalOutcome::Lost));
    p.step(Event::SystemError(true));
    assert_eq!(p.step(Event::SystemError(false)), vec![send(2, 10, 4)]);
}

#[test]
fn idle_done_and_feedback_of_unknown_goals_are_ignored() {
    let mut p = idle();
    assert!(p.step(done(42, GoalOutcome::Succeeded)).is_empty());
    assert!(p.step(feedback(42, 3)).is_empty());
    assert_eq!(p.status(), Status::NoTask);
}

#[test]
fn status_wire_values() {
    assert_eq!(
        (
            Status::NoTask.as_u8(),
            Status::Paused.as_u8(),
            Status::Running.as_u8()
        ),
        (0, 1, 2)
    );
}
