"""Hand-segmented sentences written by the team, one list per kind of text the platform sees."""

GOLD = {
    "news": [
        "Dr. Maria Lund arrived in St. Petersburg at 3 p.m. on Jan. 5.",
        "The U.S. economy grew 2.5% in the third quarter, the Fed said on Tuesday.",
        "\"We are not done yet,\" Mr. Ortega told reporters.",
        "Shares of Acme Inc. fell 4.1 percent.",
        "Ms. Wu, who joined in 2019, will lead the U.K. team.",
    ],
    "scientific": [
        "Patients (n = 42) received 5.5 mg/kg of drug X, i.e. a low dose.",
        "Results were significant (p < 0.05; see Fig. 2).",
        "Earlier work by Chen et al. reported similar effects.",
        "We used standard tools, e.g. logistic regression and t-tests.",
        "The mean age was 61.3 years (SD 8.2).",
    ],
    "dialogue": [
        "Sure, I can help with that.",
        "What day would you like to travel?",
        "Tuesday works... or maybe Wednesday.",
        "OK!",
        "Is there anything else?",
        "No, that's all, thanks.",
    ],
    "redacted": [
        "The train <CODE_1> leaves from <PLACE_1> at <TIME_1>.",
        "Call <PHONENUMBER_1> to change the booking.",
        "Your reference is <CODE_2>.",
        "The hotel is at <ADDRESS_1>, near <PLACE_2>.",
        "See you on <DAY_1>!",
    ],
}
