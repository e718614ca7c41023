//! Time series: every `interval`, a `Sample` event has the queues' backlogs or the
//! flows' rates written out (`output::series` formats them).

use crate::engine::Event;
use crate::output::series::{FlowSeries, QueueSeries};
use crate::scenario::OutputSpec;
use crate::units::Time;
use crate::world::World;
use std::path::Path;

/// Series ids carried by `Event::Sample`.
const QUEUE_SERIES: u8 = 0;
const FLOW_SERIES: u8 = 1;

/// The time series a run writes, each with its interval.
pub(super) struct Sampler {
    queue: Option<(Time, QueueSeries)>,
    flow: Option<(Time, FlowSeries)>,
}

impl Sampler {
    /// Creates the series `out` asks for in `dir` (none without a directory) and
    /// schedules their first samples: queues at time 0, flows one interval in.
    pub(super) fn new(
        out: &OutputSpec,
        dir: Option<&Path>,
        world: &mut World,
    ) -> Result<Sampler, String> {
        let mut sampler = Sampler {
            queue: None,
            flow: None,
        };
        let Some(dir) = dir else {
            return Ok(sampler);
        };
        if let Some(q) = &out.queue_series {
            let series = QueueSeries::create(dir, &world.net, q).map_err(|e| e.to_string())?;
            world.events.push(
                0,
                Event::Sample {
                    series: QUEUE_SERIES,
                },
            );
            sampler.queue = Some((q.interval.0, series));
        }
        if let Some(f) = &out.flow_series {
            let series = FlowSeries::create(dir).map_err(|e| e.to_string())?;
            world.events.push(
                f.interval.0,
                Event::Sample {
                    series: FLOW_SERIES,
                },
            );
            sampler.flow = Some((f.interval.0, series));
        }
        Ok(sampler)
    }

    /// A `Sample` event for `series` fired: writes a sample and schedules the next.
    pub(super) fn sample(
        &mut self,
        now: Time,
        series: u8,
        world: &mut World,
    ) -> std::io::Result<()> {
        match series {
            QUEUE_SERIES => {
                if let Some((interval, s)) = &mut self.queue {
                    s.sample(now, &world.net, &world.pkts)?;
                    world.events.push(now + *interval, Event::Sample { series });
                }
            }
            _ => {
                if let Some((interval, s)) = &mut self.flow {
                    s.sample(now, *interval, &mut world.flows)?;
                    world.events.push(now + *interval, Event::Sample { series });
                }
            }
        }
        Ok(())
    }

    /// The run is over: flushes every series.
    pub(super) fn finish(&mut self, tier_names: &[&str]) -> Result<(), String> {
        if let Some((_, s)) = &mut self.queue {
            s.finish(tier_names).map_err(|e| e.to_string())?;
        }
        if let Some((_, s)) = &mut self.flow {
            s.finish().map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}
