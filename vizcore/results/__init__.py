"""Results that outlive a class: quizzes' and questions' answers in a database, the class report, the exports."""
