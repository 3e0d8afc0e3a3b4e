//! The variants that say what did not finish: each says it in its own words, from its data,
//! and keeps its cause as its source, never repeated in its message.

use std::error::Error;

use super::StoreError;
use crate::cosmos::Container;

#[cfg(feature = "embedded")]
#[tokio::test]
async fn a_task_that_died_keeps_how_it_ended_as_its_source() {
    let ended = tokio::spawn(async { panic!("the task's own words") }).await.unwrap_err();
    let error = StoreError::TaskDied { work: "a read of the database", source: ended };
    assert_eq!(error.to_string(), "a read of the database did not finish");
    let source = error.source().expect("how the task ended");
    assert!(source.to_string().contains("panicked"), "{source}");
    let report = crate::logging::with_causes(&error);
    assert_eq!(report.matches("panicked").count(), 1, "the cause once, from the source: {report}");
}

#[cfg(feature = "embedded")]
#[test]
fn a_full_disk_is_its_own_kind_of_refused_write() {
    use crate::cosmos::embedded::database::Refused;
    let refused = Refused { disk_full: false, message: "database is locked".into() };
    let error = refused.into_store_error();
    assert!(
        matches!(&error, StoreError::NotCommitted { reason } if reason == "database is locked"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the write could not be committed, so it was undone: database is locked"
    );
    assert!(error.source().is_none());
    let full = Refused { disk_full: true, message: "database or disk is full".into() };
    assert!(matches!(full.into_store_error(), StoreError::DiskFull));
}

#[test]
fn a_copy_that_kept_changing_names_where_it_is() {
    let error = StoreError::CopyKeptChanging { post_id: "p1".into(), container: Container::Feed };
    assert_eq!(error.to_string(), "the copy of post p1 in feed kept changing");
    assert!(error.source().is_none());
}

#[test]
fn a_change_log_that_kept_changing_says_how_much_it_changed() {
    let error = StoreError::ChangeLogKeptChanging { attempts: 20, names: 3 };
    assert_eq!(
        error.to_string(),
        "the change log kept changing under 20 tries to append 3 names to it"
    );
    assert!(error.source().is_none());
}

#[test]
fn a_procedure_that_did_not_finish_names_itself_with_the_post() {
    let error =
        StoreError::ProcedureUnfinished { procedure: "updateUsernames", post_id: "p1".into() };
    assert_eq!(error.to_string(), "updateUsernames did not finish in post p1");
    assert!(error.source().is_none());
}
