//! Runs a [`SimJob`] inside this process. Called by the hidden `mpicast simulate` subcommand,
//! once per process (the SimGrid engine cannot be re-initialised).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use anyhow::{bail, Context, Result};

use crate::model::simjob::{ActorOutcome, HostUsage, SimAction, SimJob, SimOutcome};
use crate::sim::engine::{self, Engine, EngineOptions, Mailbox};

/// Network model used unless the job overrides it: SMPI's, calibrated for MPI (the in-process
/// default, LV08, is not).
pub const DEFAULT_NETWORK_MODEL: &str = "network/model:SMPI";

pub fn run_job(job: &SimJob) -> Result<SimOutcome> {
    let names: HashMap<&str, usize> = job.actors.iter().enumerate().map(|(i, a)| (a.name.as_str(), i)).collect();
    if names.len() != job.actors.len() {
        bail!("actor names in the job are not unique");
    }
    for a in &job.actors {
        for act in &a.actions {
            let peer = match act {
                SimAction::Send { to, .. } => Some(to),
                SimAction::Recv { from } => Some(from),
                _ => None,
            };
            if let Some(p) = peer {
                if !names.contains_key(p.as_str()) {
                    bail!("actor {}: peer {:?} is not an actor of the job", a.name, p);
                }
            }
        }
    }

    let mut cfg = vec![DEFAULT_NETWORK_MODEL.to_string()];
    cfg.extend(job.cfg.iter().cloned());
    let eng = Engine::init(&EngineOptions { cfg, host_load: true, ..Default::default() })?;
    eng.load_platform(&job.platform)?;

    let outcomes: Rc<RefCell<Vec<Option<ActorOutcome>>>> = Rc::new(RefCell::new(vec![None; job.actors.len()]));
    for (i, spec) in job.actors.iter().enumerate() {
        let host = eng.host(&spec.host).with_context(|| format!("actor {}", spec.name))?;
        let spec = spec.clone();
        let outcomes = Rc::clone(&outcomes);
        eng.spawn(&spec.name.clone(), host, move || {
            let mut compute_s = 0.0;
            let mut comm_s = 0.0;
            for act in &spec.actions {
                let t0 = engine::now();
                match act {
                    SimAction::Compute { flops } => {
                        engine::execute(*flops);
                        compute_s += engine::now() - t0;
                    }
                    SimAction::Send { to, bytes } => {
                        Mailbox::by_name(&format!("{}->{}", spec.name, to)).put(Box::new(()), *bytes);
                        comm_s += engine::now() - t0;
                    }
                    SimAction::Recv { from } => {
                        let _ = Mailbox::by_name(&format!("{}->{}", from, spec.name)).get();
                        comm_s += engine::now() - t0;
                    }
                    SimAction::Sleep { seconds } => engine::sleep(*seconds),
                }
            }
            outcomes.borrow_mut()[i] = Some(ActorOutcome {
                name: spec.name.clone(),
                host: spec.host.clone(),
                finish_s: engine::now(),
                compute_s,
                comm_s,
            });
        })?;
    }
    eng.run();

    let outcomes = outcomes.borrow();
    let mut actors = Vec::with_capacity(outcomes.len());
    for (spec, o) in job.actors.iter().zip(outcomes.iter()) {
        match o {
            Some(o) => actors.push(o.clone()),
            None => bail!("actor {} did not finish (deadlock: a receive without a matching send?)", spec.name),
        }
    }
    let hosts = eng
        .hosts()
        .into_iter()
        .map(|h| HostUsage {
            name: h.name(),
            speed_flops: h.speed_flops(),
            cores: h.core_count(),
            computed_flops: h.computed_flops(),
        })
        .collect();
    Ok(SimOutcome { end_time_s: eng.clock(), actors, hosts })
}
