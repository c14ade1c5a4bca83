use super::*;

#[test]
fn a_figure_reads_as_the_share_of_its_target_reached() {
    let reached = |figure, goal| Row::new("m", "v").goal(figure, goal, "t").reached();
    assert_eq!(reached(0.25, Goal::AtLeast(0.5)), Some(50.0));
    assert_eq!(reached(10.0, Goal::AtMost(5.0)), Some(50.0));
    assert_eq!(reached(2.5, Goal::AtMost(5.0)), Some(200.0));
    assert_eq!(Row::new("m", "v").reached(), None);
}

#[test]
fn options_refuse_unknown_arguments_and_values_that_are_not_positive() {
    let parse = |args: &[&str]| Options::parse(args.iter().map(|arg| (*arg).to_owned()).collect());
    let options = parse(&["--clients", "8", "--no-langgraph"]).expect("valid");
    assert_eq!((options.clients, options.langgraph, options.submits), (8, false, 4000));
    for bad in [
        &["--clients", "0"][..],
        &["--clients"],
        &["--streams", "many"],
        &["--fast"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?} was accepted");
    }
}
