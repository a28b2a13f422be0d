//! [`Asker`]: how a cognition system asks the model for a resident: the request sent, the job
//! recorded on the resident with the step its answer is due.

use crate::cognition::ask::job::Job;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::llm::{Llm, LlmRequest, OutputShape, Sampling};
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

/// What cognition systems need to ask the model: the runtime, the clock and the settings.
#[derive(SystemParam)]
pub struct Asker<'w> {
    /// The LLM runtime.
    pub llm: ResMut<'w, Llm>,
    /// The clock (for due steps).
    pub clock: Res<'w, crate::sim::clock::SimClock>,
    /// Settings.
    pub cfg: Res<'w, crate::cognition::config::Cognition>,
    /// Prompt templates.
    pub prompts: Res<'w, crate::cognition::ask::prompts::Prompts>,
}

impl Asker<'_> {
    /// A chat request for `purpose`, answered greedily in at most `max_tokens`: the template of
    /// that purpose rendered for `who` with `slots`, the answer in `shape`. The one way
    /// cognition writes a request (submitted with [`Self::ask`]).
    pub fn chat(
        &self,
        purpose: &str,
        who: &Who,
        slots: &[(&str, &str)],
        shape: OutputShape,
        max_tokens: u32,
    ) -> LlmRequest {
        LlmRequest::chat(purpose, self.prompts.render_for(purpose, who, slots), shape)
            .sampling(Sampling::greedy(max_tokens))
    }

    /// Submits a request for an agent and records the job, due `slack` steps from now.
    pub fn ask(
        &mut self,
        agent: Entity,
        pending: &mut Pending,
        req: LlmRequest,
        job: Job,
        slack: u32,
    ) {
        let handle = self.llm.submit(req.clone().for_agent(agent));
        let due = self.clock.step + slack as u64;
        if self.cfg.0.pacing == crate::cognition::config::Pacing::Live && job.is_live() {
            pending.push_live(handle, req, job, due);
        } else {
            pending.push(handle, req, job, due);
        }
    }

    /// Due slack for memory work.
    pub fn memory_slack(&self) -> u32 {
        self.cfg.0.memory_slack_steps
    }

    /// Steps from now until a minute of today (0 when it has passed).
    pub fn steps_until(&self, minute: u32) -> u32 {
        let now = self.clock.now.second_of_day();
        let at = minute * 60;
        if at <= now {
            0
        } else {
            (at - now).div_ceil(self.clock.sec_per_step)
        }
    }

    /// The step number `minutes` game minutes from now.
    pub fn steps_in(&self, minutes: u32) -> u32 {
        (minutes * 60).div_ceil(self.clock.sec_per_step)
    }
}
